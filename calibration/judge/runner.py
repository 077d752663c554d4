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
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import numpy as np

from .. import split as splits
from .. import store
from ..errors import (
    OPTION_WORDS,
    CallFailed,
    EndpointRejected,
    EndpointUnreachable,
    Hint,
    InputError,
    JudgeError,
    Option,
    Problem,
    ReplyError,
    phrase,
)
from ..fmt import plural
from ..store import Database, RunTotals
from .client import ChatClient, JudgeConfig, Usage
from .compare import LabComparison, baseline_choice, compare_runs
from .examples import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_EXAMPLES,
    Candidate,
    LeakGuard,
    build_examples,
    examples_block,
    pick_examples,
)
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
    reply_invalid: bool = False  # failed because the replies could not be read as verdicts


async def judge_answer(
    client: ChatClient, template: PromptTemplate | str, item: AnswerInput, prompt: str | None = None
) -> AnswerResult:
    """Judge one answer's fixed claims: a call, and one corrective call if the reply is bad.

    A bad second reply, or a request that fails for good, is a failed result with no
    verdicts. EndpointRejected and EndpointUnreachable propagate: they are the run's problem,
    not this answer's.
    """
    t0 = time.perf_counter()
    if prompt is None:
        prompt = render_prompt(template, item)
    claim_ids = [c.claim_id for c in item.claims]
    chunk_ids = [c.chunk_id for c in item.chunks]
    messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
    exchanges: list[dict[str, Any]] = []
    usage = Usage()
    attempts = 0
    response: str | None = None

    def result(
        status: Literal["ok", "failed"],
        error: str | None,
        verdicts: list[ClaimVerdict] | None = None,
        invalid: bool = False,
    ) -> AnswerResult:
        # The last reply is the call's `response`; its round keeps a marker instead of a second copy.
        if exchanges and "response" in exchanges[-1] and exchanges[-1]["response"] is response:
            del exchanges[-1]["response"]
            exchanges[-1]["response_in_call"] = True
        return AnswerResult(
            item.answer_id,
            status,
            prompt,
            response,
            exchanges,
            attempts,
            error,
            usage,
            round((time.perf_counter() - t0) * 1000, 1),
            verdicts or [],
            invalid,
        )

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
        entry: dict[str, Any] = {
            "round": round_no,
            "sent": sent,
            "http": comp.log,
            "response": comp.content,
            "finish_reason": comp.finish_reason,
        }
        exchanges.append(entry)
        try:
            verdicts = parse_reply(comp.content, claim_ids, chunk_ids)
        except ReplyError as exc:
            entry["error"] = str(exc)
            if round_no == 1:
                messages += [
                    {"role": "assistant", "content": comp.content or ""},
                    {"role": "user", "content": correction_message(exc)},
                ]
                continue
            return result("failed", f"invalid reply after a corrective retry: {exc}", invalid=True)
        return result("ok", None, verdicts)
    raise AssertionError("unreachable")


async def judge_items(
    client: ChatClient,
    template: PromptTemplate | str,
    items: Iterable[AnswerInput],
    on_result: Callable[[AnswerInput, AnswerResult], Awaitable[None]],
    prompt_for: Callable[[AnswerInput], str] | None = None,
) -> None:
    """Judge every item with `client.config.concurrency` workers, awaiting `on_result` for each.

    `prompt_for` renders (and checks) an item's prompt; default `render_prompt(template, item)`.

    Workers pull from one iterator, so prompts are rendered only when a slot frees up. An
    exception from a worker or from `on_result` (including Streamlit's stop, a
    BaseException) cancels the rest and is re-raised; results already handed over stay.
    """
    it = iter(items)

    async def worker() -> None:
        for item in it:
            prompt = prompt_for(item) if prompt_for is not None else None
            res = await judge_answer(client, template, item, prompt)
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

# A run stops when its first INVALID_REPLY_STOP answers all failed to give usable verdicts
# (each after one corrective round: 2 requests). Five, because a model that is merely
# unreliable at the format (half its replies usable) passes one of five with probability
# 1 - 0.5**5 = 97%, while a model that never produces the format costs at most
# 2 * (5 + concurrency - 1) requests (16 at the default concurrency of 4) instead of all.
INVALID_REPLY_STOP = 5
CHARS_PER_TOKEN = 4  # a rough rule for English text in BPE tokenizers; the estimate says so


@dataclass(frozen=True, slots=True)
class LabScope:
    """Which answers a lab run judges: those with a human-labeled claim, a cycle's, the tuning
    or holdout part of the split, or all."""

    kind: Literal["labeled", "cycle", "all", "tuning", "holdout", "run"]
    cycle: str | None = None  # the cycle's name, or the judge run's for kind "run"

    def __str__(self) -> str:
        return f"{self.kind}:{self.cycle}" if self.kind in ("cycle", "run") else self.kind


SCOPE_KINDS = ("labeled", "tuning", "holdout", "all")


def parse_scope(text: str) -> LabScope:
    """'labeled', 'tuning', 'holdout', 'all', 'cycle:NAME' or 'run:MODEL@VERSION' (the labeled
    claims of one judge run: one dataset, not every labeled answer) as a LabScope."""
    text = text.strip()
    if text in SCOPE_KINDS:
        return LabScope(text)  # type: ignore[arg-type]
    if text.startswith("cycle:") and text[6:].strip():
        return LabScope("cycle", text[6:].strip())
    if text.startswith("run:") and text[4:].strip():
        return LabScope("run", text[4:].strip())
    raise InputError(f"scope {text!r}: use labeled, tuning, holdout, all, cycle:NAME or run:MODEL@VERSION")


def scope_answer_ids(db: Database, scope: LabScope) -> list[str]:
    """Answers in scope that have claims. Each answer is judged on all its claims: a call
    is keyed by answer, so its prompt must not depend on which scope asked for it."""
    if scope.kind == "cycle" and scope.cycle is not None:
        return store.lab.scope_answer_ids(db, cycle_id=store.cycle_id(db, scope.cycle))
    if scope.kind == "run" and scope.cycle is not None:
        judged = store.split.run_answer_ids(db, store.find_judge_run(db, scope.cycle).id)
        return [a for a in store.lab.scope_answer_ids(db, labeled_only=True) if a in judged]
    if scope.kind in ("tuning", "holdout"):
        sp = splits.current(db)
        ids = sp.tuning if scope.kind == "tuning" else sp.holdout + sp.pending
        return sorted(set(ids) & set(store.lab.scope_answer_ids(db, labeled_only=False)))
    return store.lab.scope_answer_ids(db, labeled_only=scope.kind == "labeled")


def load_inputs(db: Database, answer_ids: Sequence[str]) -> list[AnswerInput]:
    """What the judge is shown for each answer, as stored."""
    return [
        AnswerInput(
            a.answer_id,
            a.question,
            a.answer,
            tuple(ChunkText(*c) for c in a.chunks),
            tuple(ClaimText(*c) for c in a.claims),
        )
        for a in store.lab.answer_texts(db, answer_ids)
    ]


def call_record(item: AnswerInput, res: AnswerResult) -> store.lab.CallRecord:
    """An answer's result as the store keeps it: claim ids resolved to their stored claims."""
    pks = {c.claim_id: c.claim_pk for c in item.claims}
    u = res.usage
    return store.lab.CallRecord(
        answer_id=item.answer_id,
        status=res.status,
        prompt=res.prompt,
        response=res.response,
        exchanges=res.exchanges,
        attempts=res.attempts,
        error=res.error,
        prompt_tokens=u.prompt_tokens,
        completion_tokens=u.completion_tokens,
        total_tokens=u.total_tokens,
        latency_ms=res.latency_ms,
        verdicts=tuple(
            store.lab.VerdictRecord(pks[v.claim_id], v.verdict.value, v.raw_verdict, v.rationale, v.evidence)
            for v in res.verdicts
        ),
    )


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
class LabPlan:
    """Everything settled before the first request: what will be sent, and what it may cost."""

    scope: LabScope
    answer_ids: list[str]  # in scope
    items: list[AnswerInput]  # still to judge (not ok in an earlier invocation)
    existing: store.JudgeRun | None  # the run to resume
    revises: store.JudgeRun | None  # the run this prompt revises: default baseline, source of examples
    revises_reason: str
    baseline: store.JudgeRun | None  # named explicitly
    examples: list[store.lab.ExampleRecord]
    example_answers: dict[int, str]  # example claim pk -> its answer id
    prompts: dict[str, str]  # answer id -> the prompt to send, already checked for leaks
    claims: int  # claims of the items

    @property
    def prompt_chars(self) -> int:
        return sum(len(p) for p in self.prompts.values())

    @property
    def estimated_prompt_tokens(self) -> int:
        """About CHARS_PER_TOKEN characters per token over the rendered prompts (first round)."""
        return -(-self.prompt_chars // CHARS_PER_TOKEN)

    def cost_line(self) -> str:
        """Before the run: answers to request, and the estimated prompt tokens."""
        done = len(self.answer_ids) - len(self.items)
        resumed = f" ({done} already judged, not requested again)" if done else ""
        ex = f" · {plural(len(self.examples), 'few-shot example')} in each prompt" if self.examples else ""
        n = len(self.items)
        return (
            f"about to send {plural(n, 'request')} for {plural(n, 'answer')} of "
            f"{len(self.answer_ids)} in scope {self.scope}{resumed}: ~{self.estimated_prompt_tokens:,}"
            f" prompt tokens estimated from the rendered prompts ({self.prompt_chars:,} characters at "
            f"~{CHARS_PER_TOKEN} per token; a corrective round adds more){ex}"
        )


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
    baseline_reason: Hint = ()  # `errors.phrase` words it
    estimated_prompt_tokens: int | None = None
    examples: int = 0
    revises: str | None = None

    def cost_line(self) -> str:
        """After the run: the tokens the endpoint reported, against the estimate."""
        u = self.usage
        if self.answers_ok + self.answers_failed == 0:
            used = "tokens used: none (no request was sent)"
        elif u.total_tokens is None:
            used = "tokens used: not reported by the endpoint"
        else:
            used = (
                f"tokens used: {u.total_tokens:,} (prompt {u.prompt_tokens or 0:,}, completion "
                f"{u.completion_tokens or 0:,})"
            )
        est = (
            ""
            if self.estimated_prompt_tokens is None
            else (f"; estimated before the run: ~{self.estimated_prompt_tokens:,} prompt tokens")
        )
        return used + est

    def to_dict(self, words: Mapping[Option, str] = OPTION_WORDS) -> dict[str, Any]:
        """The summary for scripts (`judge run --json`), the options it names in `words`."""
        t, u = self.totals, self.usage
        return {
            "run": self.run.name,
            "resumed": self.resumed,
            "scope": self.scope,
            "answers_in_scope": self.answers_in_scope,
            "answers_skipped": self.answers_skipped,
            "answers_ok": self.answers_ok,
            "answers_failed": self.answers_failed,
            "claims_judged": self.claims_judged,
            "revises": self.revises,
            "examples": self.examples,
            "estimated_prompt_tokens": self.estimated_prompt_tokens,
            "tokens": {"prompt": u.prompt_tokens, "completion": u.completion_tokens, "total": u.total_tokens},
            "run_totals": {
                "answers_ok": t.answers_ok,
                "answers_failed": t.answers_failed,
                "claims_judged": t.claims_judged,
                "total_tokens": t.total_tokens,
            },
            "failures": [{"error": e, "answers": a} for e, a in failure_groups(self.failures)],
            "baseline": None if self.baseline is None else self.baseline.name,
            "baseline_reason": phrase(self.baseline_reason, words),
            "comparison": None if self.comparison is None else self.comparison.to_dict(),
        }


def failure_groups(failures: Sequence[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(error, sorted answer ids) with the answers that failed alike grouped, most frequent
    first: a hundred answers failing with one error is one line, not a hundred."""
    groups: dict[str, list[str]] = {}
    for aid, err in failures:
        groups.setdefault(err, []).append(aid)
    return sorted(((err, sorted(aids)) for err, aids in groups.items()), key=lambda g: -len(g[1]))


def choose_revised_run(
    db: Database, explicit: str | None, model: str, existing: store.JudgeRun | None
) -> tuple[store.JudgeRun | None, str]:
    """The run a new prompt revises, and why: the one named; else the one a resumed run
    recorded; else the only run with human-labeled claims; else the only such run of the same
    model; else the one with the most labeled claims. Any tie is refused (InputError) with the
    runs named: which run a prompt revises decides the baseline and the examples, so it is
    never settled by a tie-break."""
    named = store.find_judge_run(db, explicit) if explicit else None
    if existing is not None:
        recorded = store.lab.revised_run_id(db, existing.id)
        found = next((r for r in store.judge_runs(db) if r.id == recorded), None)
        if found is not None:
            if named is not None and named.id != found.id:
                # A resumed run keeps its examples and baseline: switching mid-run would mix two.
                raise InputError(
                    f"{existing.name} was started as a revision of {found.name}; resume it "
                    f"with that, or give the prompt a new version to revise {named.name}"
                )
            return found, "recorded when the run was started"
    if named is not None:
        return named, "named"
    counts = store.lab.labeled_claim_counts(db)
    runs = [r for r in store.judge_runs(db) if counts.get(r.id) and (existing is None or r.id != existing.id)]
    if not runs:
        return None, "no run has human-labeled claims"
    if len(runs) == 1:
        return runs[0], "the only run with human-labeled claims"
    same = [r for r in runs if r.judge_model == model]
    if len(same) == 1:
        return same[0], f"the only labeled run of model {model}"
    pool = same or runs
    best = max(counts[r.id] for r in pool)
    top = [r for r in pool if counts[r.id] == best]
    if len(top) == 1:
        return top[0], f"the run with the most human-labeled claims ({best})"
    raise InputError(
        Problem(
            f"which run does this prompt revise? {', '.join(r.name for r in top)} each have "
            f"{best} human-labeled claims",
            hint=("name one with ", Option.REVISES),
        )
    )


def example_candidates(db: Database, run: store.JudgeRun, tuning_answers: set[str]) -> list[Candidate]:
    """Tuning claims with a final human label and `run`'s verdict: what examples are picked from."""
    from ..vocab import LABELS

    table = store.claim_table(db, run.id)
    out = []
    for i in np.flatnonzero(table.agreed()).tolist():
        aid = table.answer_ids[int(table.answer[i])]
        if aid in tuning_answers:
            out.append(
                Candidate(
                    int(table.claim_pk[i]),
                    table.keys[i],
                    aid,
                    LABELS[int(table.human[i])],
                    LABELS[int(table.judge[i])],
                )
            )
    return out


def prepare_lab(
    db: Database,
    config: JudgeConfig,
    template: PromptTemplate,
    *,
    scope: LabScope | str = "labeled",
    revises: str | None = None,
    baseline: str | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    max_example_chars: int = DEFAULT_MAX_CHARS,
    created_by: str | None = None,
    write_split: bool = True,
) -> LabPlan:
    """Settle a run before anything is sent: the split brought up to date (the first run seals
    the first holdout), the answers to judge, the run revised, the few-shot examples (from
    tuning claims only) and every prompt, each checked to carry no holdout claim text. Raises
    before any request when something is wrong. `write_split` False plans on the split as it
    stands and writes nothing: what a confirm step shows before the lead agrees."""
    scope = parse_scope(scope) if isinstance(scope, str) else scope
    if write_split:
        splits.ensure_split(db, created_by=created_by)
    answer_ids = scope_answer_ids(db, scope)
    if not answer_ids:
        labeled_kinds = ("labeled", "tuning", "holdout", "run")
        hint = " (no claim has a human label yet)" if scope.kind in labeled_kinds else ""
        raise InputError(f"scope {scope} holds no answers with claims{hint}; nothing to judge")
    base_run = store.find_judge_run(db, baseline) if baseline else None
    existing = store.lab.find_lab_run(db, config.model, template.version, template.sha256)
    if base_run is not None and existing is not None and base_run.id == existing.id:
        raise InputError(f"the baseline {baseline!r} is the run itself; name another run")
    revised, reason = choose_revised_run(db, revises, config.model, existing)
    if revised is not None and existing is not None and revised.id == existing.id:
        raise InputError("a run cannot revise itself; name the run the prompt was revised from")
    done_before = store.lab.ok_answer_ids(db, existing.id) if existing is not None else set()
    pending = [a for a in answer_ids if a not in done_before]
    items = load_inputs(db, pending)

    sp = splits.current(db)
    sealed_answers = set(sp.holdout) | set(sp.pending)
    holdout_texts = store.split.claim_texts(db, sealed_answers)
    guard = LeakGuard(holdout_texts)
    examples: list[store.lab.ExampleRecord] = []
    if existing is not None:
        examples = store.lab.run_examples(db, existing.id)  # a resumed run keeps its examples
    if not examples and template.uses_examples and revised is not None:
        picked = pick_examples(
            example_candidates(db, revised, set(sp.tuning)),
            max_count=max_examples,
            seed=template_seed(template),
        )
        material = {
            m.claim_pk: m for m in store.lab.example_material(db, revised.id, [c.claim_pk for c in picked])
        }
        examples = build_examples(picked, material, max_chars=max_example_chars)
    guard.check_examples(examples)
    example_answers = store.lab.claim_answer_ids(db, [e.claim_pk for e in examples])
    prompts = {
        it.answer_id: guard.check(
            render_prompt(template, it, examples_block(examples, example_answers, it.answer_id)), it
        )
        for it in items
    }
    return LabPlan(
        scope,
        answer_ids,
        items,
        existing,
        revised,
        reason,
        base_run,
        examples,
        example_answers,
        prompts,
        sum(len(it.claims) for it in items),
    )


def template_seed(template: PromptTemplate) -> int:
    """The seed of the example shuffle: fixed by the template text, so a version always
    picks the same examples from the same labels."""
    return int(template.sha256[:8], 16)


class _Invocation:
    """The state of one `arun_lab` call while its answers are judged and stored.

    The writer thread owns one connection for the whole invocation: connections are never
    shared between threads (the store's rule), and reopening one per answer is what costs:
    closing the last connection of a WAL database checkpoints it (milliseconds per answer).
    `write` and `close` run on that thread only; `on_result` runs on the event loop.
    """

    def __init__(
        self,
        db_path: Path | str,
        config: JudgeConfig,
        template: PromptTemplate,
        plan: LabPlan,
        progress: Callable[[LabProgress], None] | None,
        t0: float,
        stop_after_invalid: int,
    ) -> None:
        self.db_path, self.config, self.template, self.plan = db_path, config, template, plan
        self.total = len(plan.items)
        self.progress = progress
        self.t0 = t0
        self.stop_after_invalid = stop_after_invalid
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-writer")
        self.writer_db: Database | None = None
        self.run: store.JudgeRun | None = None  # set once the first result is stored
        self.stored = 0  # answers stored by this invocation, counted by the writer itself
        self.usage = Usage()
        self.ok = self.failed = self.claims = self.invalid = 0
        self.failures: list[tuple[str, str]] = []

    def write(self, item: AnswerInput, res: AnswerResult) -> int:
        if self.writer_db is None:
            self.writer_db = store.connect(self.db_path)
        db = self.writer_db
        with store.write(db):  # the run is created in the transaction storing its first call
            if self.run is None:
                cfg, tpl, plan = self.config, self.template, self.plan
                self.run = store.lab.open_lab_run(
                    db,
                    model=cfg.model,
                    version=tpl.version,
                    template=tpl.text,
                    template_sha256=tpl.sha256,
                    base_url=cfg.base_url,
                    params=cfg.params(),
                    scope=str(plan.scope),
                )[0]
                if plan.revises is not None:
                    store.lab.set_revised_run(db, self.run.id, plan.revises.id)
                store.lab.record_examples(db, self.run.id, plan.examples)
            written = store.lab.record_call(db, self.run.id, call_record(item, res))
        self.stored += 1
        return written

    def close(self) -> None:
        if self.writer_db is not None:
            self.writer_db.close()

    def report(self) -> None:
        if self.progress is not None:
            self.progress(
                LabProgress(
                    self.ok + self.failed,
                    self.total,
                    self.ok,
                    self.failed,
                    self.claims,
                    self.usage.total_tokens,
                    time.perf_counter() - self.t0,
                )
            )

    async def on_result(self, item: AnswerInput, res: AnswerResult) -> None:
        loop = asyncio.get_running_loop()
        written = await loop.run_in_executor(self.writer, self.write, item, res)
        self.usage.add(res.usage)
        if res.status == "ok":
            self.ok += 1
        else:
            self.failed += 1
            self.invalid += res.reply_invalid
        self.claims += written
        if res.error:
            self.failures.append((item.answer_id, res.error))
        self.report()
        if self.ok == 0 and self.invalid >= self.stop_after_invalid:
            raise EndpointRejected(
                (
                    f"the first {plural(self.invalid, 'answer')} all got replies that cannot be read as "
                    f"verdicts (even after a corrective round), so the run stopped instead of paying for "
                    f"the rest. Last error: {res.error}. Check that the model follows the JSON format in "
                    "the template (try ",
                    Option.JSON_MODE,
                    ", or a stronger model), then run again.",
                )
            )

    def shutdown(self) -> None:
        # Waits for a write already handed over, so an interrupted run keeps it.
        self.writer.submit(self.close)
        self.writer.shutdown(wait=True)


async def arun_lab(
    config: JudgeConfig,
    template: PromptTemplate,
    *,
    scope: LabScope | str = "labeled",
    db_path: str | Path | None = None,
    progress: Callable[[LabProgress], None] | None = None,
    baseline: str | None = None,
    revises: str | None = None,
    plan: LabPlan | None = None,
    stop_after_invalid: int = INVALID_REPLY_STOP,
    transport: httpx.AsyncBaseTransport | None = None,
) -> LabSummary:
    """Run (or resume) the lab run MODEL@VERSION over the answers in scope.

    Answers that already have an ok call in this run are not requested again; failed ones
    are. Each answer is committed as soon as it is judged, so an interruption loses at most
    the calls in flight. `progress` runs on the caller's thread after each answer; an
    exception from it stops the run (that is how a UI cancels).

    `plan` (from `prepare_lab`, e.g. to show its cost line first) is made here when absent.
    An endpoint that cannot be reached, that refuses the requests (a 4xx other than 408/429),
    or whose first `stop_after_invalid` answers all fail to give usable verdicts stops the
    whole run (EndpointUnreachable / EndpointRejected); what was stored stays. The run is
    created only when its first result is stored. The comparison's baseline is `baseline`
    when named, else the run this prompt revises (`compare.baseline_choice`).
    """
    t0 = time.perf_counter()
    db_path = (
        (db_path if store.is_postgres(db_path) else Path(db_path))
        if db_path is not None
        else store.default_db_url()
    )
    if plan is None:
        with store.session(db_path) as db:
            plan = prepare_lab(db, config, template, scope=scope, revises=revises, baseline=baseline)
    scope = plan.scope
    existing = plan.existing
    state = _Invocation(db_path, config, template, plan, progress, t0, stop_after_invalid)
    state.report()
    stop: EndpointUnreachable | EndpointRejected | None = None
    try:
        if plan.items:
            async with ChatClient(config, transport=transport) as client:
                await judge_items(
                    client,
                    template,
                    plan.items,
                    state.on_result,
                    prompt_for=lambda it: plan.prompts[it.answer_id],
                )
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
    base_run = plan.baseline
    reason: Hint = ("named",) if base_run is not None else ()
    with store.session(db_path) as db:
        store.lab.finish_lab_run(db, run.id)
        totals = store.lab.run_totals(db, run.id)
        comparison = None
        if totals.claims_judged == 0:
            base_run, reason = None, ("the run has no verdicts yet",)
        else:
            cycle = scope.cycle if scope.kind == "cycle" else None
            if base_run is None:
                base_run, reason = baseline_choice(db, run, cycle)
            if base_run is not None and base_run.id != run.id:
                comparison = compare_runs(db, run, base_run, cycle)
    pending = len(plan.items)
    return LabSummary(
        run,
        existing is not None,
        str(scope),
        len(plan.answer_ids),
        len(plan.answer_ids) - pending,
        state.ok,
        state.failed,
        state.claims,
        state.usage,
        totals,
        time.perf_counter() - t0,
        state.failures,
        base_run,
        comparison,
        reason,
        plan.estimated_prompt_tokens,
        len(plan.examples),
        None if plan.revises is None else plan.revises.name,
    )


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
    claims = store.lab.claim_count(db, ids) if ids else 0
    found = store.run_id(db, model, version, create=False)
    done = len(store.lab.ok_answer_ids(db, found) & set(ids)) if found is not None else 0
    return RunPlan(len(ids), claims, done)


def revised_run_options(db: Database, model: str) -> tuple[list[str], str | None, str]:
    """For a form: the runs with human-labeled claims (names), the default run revised (None on
    a tie: the person must choose), and the reason in words."""
    counts = store.lab.labeled_claim_counts(db)
    names = [r.name for r in store.judge_runs(db) if counts.get(r.id)]
    try:
        run, why = choose_revised_run(db, None, model, None)
    except InputError as exc:
        return names, None, str(exc)
    return names, None if run is None else run.name, why
