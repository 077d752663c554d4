"""The review workflow: blind labeling claim by claim, reveal of the judge, reconcile.

What the review page calls; no streamlit here. Every function takes an open
connection (`store.session`) and the reviewer id, which the caller takes from the
server side (its sign-in), never from a form field.

Rules kept here rather than in the page:

- A reviewer works through the answers of their queue in a cycle (`cycles.queue`);
  labels are per (claim, reviewer) and reused across cycles.
- Blind: the judge's verdicts of an answer are read only by `reveal`, which refuses
  until the reviewer committed the answer (`commit`): every claim of it settled (their
  verdict, or marked "unclear, needs discussion"), then a last look at all their verdicts,
  any of which may still change, and one explicit commit. `load_card` never reads
  `judge_verdicts`.
- Once committed the answer is revealed, and its blind labels are frozen: a later change
  would be anchored on the judge. The reviewer then reconciles each disagreement: `keep`
  (a judge error) or `judge_right` (a reviewer slip: the blind label stays in the history,
  the final label changes, the slip is counted by the store). An unclear claim is done for
  the reviewer: it waits for a lead's adjudication, and its judge verdict and rationale stay
  hidden from that reviewer until a lead settles it (so nobody gives a blind verdict after
  seeing the judge's on the same claim); it has nothing to reconcile.
- Skip records that the reviewer saw the claim and put it off. A skipped claim keeps its
  answer unrevealed and comes back after every fresh claim (`resume`), as often as it is
  skipped, until it gets a verdict or "unclear": the queue is done only when every claim is
  settled, every answer committed and every disagreement reconciled.
- Every write (a verdict, skip or unclear mark with its evidence and note, a commit, a
  reconcile) first reads, in its own transaction, whether the name may still write
  (`store.roster.check_writer`): a name a lead deactivated or renamed writes nothing and
  raises SignedOutError, whose sentence the page shows as it ends the session.
- Reviewer names typed at sign-in are matched to a known spelling (`canonical_reviewer`),
  so "anna  reviewer" and "Anna Reviewer" are one person.

Cost: every function reads by primary key or index, over one answer or over one
queue (a cycle's 15-30 answers); nothing scans tables that grow with the database.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator

from . import cycles, store
from .errors import (
    ConflictError,
    InputError,
    NotFoundError,
    NotRevealedError,
)
from .fmt import plural
from .models import StoredInt, Verdict
from .store import Database, LabelState, QueueRow
from .text import display_name

BLIND_KINDS = ("blind", "skip", "unclear")
MAX_CARD_ID = 1000  # characters of an id the card may send back (answer and chunk ids)
MAX_LABEL_MS = 24 * 3600 * 1000  # the longest time a label records (`LabelMs`)
RECONCILE_KINDS = ("keep", "judge_right")


# ---------------------------------------------------------------- cycles


# What the review page needs to know about a cycle: id, name, judge run (id and name),
# status and whether it is open to every reviewer.
CycleRef = store.review.CycleRow


def cycle(db: Database, cycle_id: int) -> CycleRef:
    """The cycle with `cycle_id`; NotFoundError when there is none."""
    return store.review.cycle_row(db, cycle_id)


def open_cycles(db: Database, reviewer: str) -> list[CycleRef]:
    """The open cycles this reviewer may label: assigned to them, or open to everyone."""
    return [
        CycleRef(c.id, c.name, c.judge_run_id, c.judge_run, c.status, c.is_open_to_all, c.require_evidence)
        for c in cycles.open_cycles_for(db, reviewer)
    ]


def queue(db: Database, cycle_id: int, reviewer: str) -> list[str]:
    """The reviewer's answers in the cycle, in cycle order."""
    return list(cycles.queue(db, cycle_id, reviewer))


def _check_in_queue(db: Database, ref: CycleRef, answer_id: str, reviewer: str) -> None:
    if ref.status != "open":
        raise ConflictError(f"cycle {ref.name!r} is closed")
    if answer_id not in queue(db, ref.id, reviewer):
        raise ConflictError(f"answer {answer_id!r} is not in {reviewer!r}'s queue of cycle {ref.name!r}")


# ---------------------------------------------------------------- the card


@dataclass(frozen=True, slots=True)
class Chunk:
    number: int  # 1-based, as shown
    chunk_id: str
    text: str
    source: str | None


@dataclass(frozen=True, slots=True)
class Claim:
    pk: int
    claim_id: str
    number: int  # 1-based, in answer order
    text: str
    label: LabelState | None

    @property
    def verdict(self) -> str | None:
        """The reviewer's blind verdict, if they gave one."""
        if self.label is None or self.label.status != "labeled":
            return None
        return self.label.blind_verdict

    @property
    def status(self) -> str:
        """'todo', 'labeled', 'skipped' or 'unclear'."""
        return "todo" if self.label is None else self.label.status

    @property
    def settled(self) -> bool:
        """Done for the reviewer before the reveal: a verdict, or marked unclear."""
        return self.verdict is not None or self.status == "unclear"


@dataclass(frozen=True, slots=True)
class Card:
    answer_id: str
    question: str
    answer: str
    chunks: tuple[Chunk, ...]
    claims: tuple[Claim, ...]
    revealed: bool = False  # committed by the reviewer: the judge is shown, blind labels frozen

    @property
    def complete(self) -> bool:
        """Every claim has the reviewer's verdict or is marked unclear: ready for the last look
        and the commit (`commit`), after which the judge is revealed."""
        return all(c.settled for c in self.claims)

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        return tuple(c.chunk_id for c in self.chunks)

    def next_open(self, after: int = -1, *, fresh_only: bool = False) -> int | None:
        """Index of the next claim still to settle after `after`, wrapping; None if none.

        Claims never seen come before skipped ones, so a verdict moves on to fresh claims
        first; `fresh_only` looks at never-seen claims only. Unclear claims are settled.
        """
        n = len(self.claims)
        order = [(after + 1 + k) % n for k in range(n)]
        for i in order:
            if self.claims[i].status == "todo":
                return i
        if not fresh_only:
            for i in order:
                if not self.claims[i].settled:
                    return i
        return None


def load_card(db: Database, answer_id: str, reviewer: str) -> Card:
    """The answer as the reviewer sees it before the reveal: no judge data at all."""
    question, answer = store.review.card_answer(db, answer_id)
    chunks = tuple(
        Chunk(i, cid, text, source)
        for i, (cid, text, source) in enumerate(store.review.card_chunks(db, answer_id), start=1)
    )
    claims = tuple(
        Claim(pk, cid, i, text, label)
        for i, (pk, cid, text, label) in enumerate(store.review.card_claims(db, answer_id, reviewer), start=1)
    )
    return Card(
        answer_id,
        question,
        answer,
        chunks,
        claims,
        revealed=store.review.answer_revealed(db, answer_id, reviewer),
    )


# ---------------------------------------------------------------- queue position and progress


@dataclass(frozen=True, slots=True)
class Position:
    """Where the reviewer stands: an answer, and a claim index (None = the reveal view)."""

    answer_id: str
    claim_index: int | None


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """The reviewer's queue in a cycle, counted by the one rule the lead's table uses
    (`cycles.claim_done` through `cycles.count_work`), so both show the same numbers."""

    claims_labeled: int  # with the reviewer's verdict
    claims_total: int
    answers_done: int  # committed (the last look) with every claim done
    answers_total: int
    claims_unclear: int = 0  # settled without a verdict: waiting for a lead
    claims_skipped: int = 0  # put off (the queue offers them again until settled)
    claims_reused: int = 0  # of `claims_done`: settled outside this cycle (another cycle, an import)

    @property
    def claims_done(self) -> int:
        """Claims settled for the reviewer: a verdict or "unclear"."""
        return self.claims_labeled + self.claims_unclear

    @property
    def fraction(self) -> float:
        return self.claims_done / self.claims_total if self.claims_total else 1.0

    def reused_note(self) -> str | None:
        """`7 reused from other cycles or imports`, the words the lead's table uses; None when
        no done claim was settled outside this cycle."""
        return f"{self.claims_reused} {cycles.REUSED_WORDS}" if self.claims_reused else None


def _queue_rows(db: Database, ref: CycleRef, answers: Sequence[str], reviewer: str) -> list[QueueRow]:
    """One row per claim of the queue, in queue then claim order (index lookups only).

    The judge verdict is compared on the server only for revealed (committed) answers;
    nothing of it leaves the store.
    """
    return store.review.queue_rows(db, ref.id, ref.judge_run_id, answers, reviewer)


def _settled(rows: Sequence[QueueRow]) -> dict[str, bool]:
    """Answer id -> every claim has the reviewer's verdict or unclear mark."""
    out: dict[str, bool] = {}
    for r in rows:
        out[r.answer_id] = out.get(r.answer_id, True) and r.status in ("labeled", "unclear")
    return out


def _resume(rows: Sequence[QueueRow]) -> Position | None:
    settled = _settled(rows)
    for r in rows:
        if r.status == "todo":
            return Position(r.answer_id, r.index)
        if r.disagrees or (settled[r.answer_id] and not r.revealed):
            return Position(r.answer_id, None)  # to reconcile, or the last look before the commit
    for r in rows:
        if r.status == "skipped":
            return Position(r.answer_id, r.index)
    return None


def _progress(rows: Sequence[QueueRow], answers: Sequence[str]) -> QueueProgress:
    n = cycles.count_work(
        ((r.answer_id, None if r.status == "todo" else r.status, r.settled_here) for r in rows),
        answers,
        {r.answer_id for r in rows if r.revealed},
    )
    return QueueProgress(
        n.done - n.unclear,
        n.total,
        n.answers_done,
        n.answers_total,
        n.unclear,
        sum(r.status == "skipped" for r in rows),
        n.reused,
    )


def resume(db: Database, cycle_id: int, reviewer: str, *, after: str | None = None) -> Position | None:
    """Where to continue, in queue order (starting after answer `after` when given, then
    wrapping): the first claim never seen, an answer settled but not yet committed (its last
    look), or a revealed answer with a disagreement still to reconcile; then the first skipped
    claim (as often as it is skipped); None when the reviewer's queue is done. Unclear claims
    are done for the reviewer (they wait for a lead)."""
    return queue_place(db, cycle_id, reviewer, after=after).position


def progress(db: Database, cycle_id: int, reviewer: str) -> QueueProgress:
    """The reviewer's claims in their queue of the cycle: with a verdict, unclear, skipped."""
    return queue_place(db, cycle_id, reviewer).progress


@dataclass(frozen=True, slots=True)
class QueuePlace:
    """The reviewer's queue in a cycle, read once: where to continue (`resume`), the progress
    (`progress`) and the queue's answers in order."""

    position: Position | None
    progress: QueueProgress
    answers: list[str]

    def number(self, answer_id: str) -> int:
        """The answer's place in the queue, counted from 1; 0 when it is not in the queue."""
        return self.answers.index(answer_id) + 1 if answer_id in self.answers else 0


def queue_place(db: Database, cycle_id: int, reviewer: str, *, after: str | None = None) -> QueuePlace:
    """`resume` (after answer `after`), `progress` and the queue, from one read of the queue."""
    ref = store.review.cycle_row(db, cycle_id)
    answers = queue(db, cycle_id, reviewer)
    rows = _queue_rows(db, ref, answers, reviewer)
    order = rows
    if after in answers:
        later = set(answers[answers.index(after) + 1 :])
        order = [r for r in rows if r.answer_id in later] + [r for r in rows if r.answer_id not in later]
    return QueuePlace(_resume(order), _progress(rows, answers), answers)


@dataclass(frozen=True, slots=True)
class CycleChoice:
    """An open cycle as the reviewer's cycle picker shows it."""

    cycle: CycleRef
    progress: QueueProgress
    has_work: bool  # `resume` would find something to do


def cycle_choices(db: Database, reviewer: str) -> list[CycleChoice]:
    """The reviewer's open cycles (as `open_cycles`), each with their progress and whether
    work remains. One queue read per open cycle; a reviewer has a handful."""
    out = []
    for ref in open_cycles(db, reviewer):
        answers = queue(db, ref.id, reviewer)
        rows = _queue_rows(db, ref, answers, reviewer)
        out.append(CycleChoice(ref, _progress(rows, answers), _resume(rows) is not None))
    return out


def default_cycle(choices: Sequence[CycleChoice]) -> CycleChoice | None:
    """The cycle to open by default: the reviewer's own work first. The first cycle assigned
    to them with work left, else the first open to everyone with work left, else the first
    assigned, else the first (order of `choices`)."""
    picks: tuple[Callable[[CycleChoice], bool], ...] = (
        lambda c: c.has_work and not c.cycle.open_to_all,
        lambda c: c.has_work,
        lambda c: not c.cycle.open_to_all,
        lambda c: True,
    )
    for pick in picks:
        found = next((c for c in choices if pick(c)), None)
        if found is not None:
            return found
    return None


def why_this_cycle(choices: Sequence[CycleChoice], shown: CycleChoice, *, picked: bool) -> str:
    """Why the review page shows `shown`, in one phrase of constants (the header states it):
    `picked` when the reviewer chose it in this tab, else the rule of `default_cycle`."""
    if picked:
        return "your choice"
    own = not shown.cycle.open_to_all
    if shown.has_work:
        if own:
            return "assigned to you"
        if any(not c.cycle.open_to_all for c in choices):
            return "open to all; your assigned cycles are done"
        return "open to all"
    return "assigned to you; all done" if own else "open to all; all done"


def next_cycle_with_work(choices: Sequence[CycleChoice], current: int) -> CycleChoice | None:
    """The first cycle with work left other than `current`, after it in order, wrapping."""
    ids = [c.cycle.id for c in choices]
    k = ids.index(current) + 1 if current in ids else 0
    for c in [*choices[k:], *choices[:k]]:
        if c.has_work and c.cycle.id != current:
            return c
    return None


@dataclass(frozen=True, slots=True)
class AnswerStatus:
    """One answer of the reviewer's queue as the answer list shows it."""

    answer_id: str
    number: int  # 1-based, queue order
    status: str  # one of ANSWER_STATUSES
    claims: int
    question: str = ""  # the answer's question, on one line and cut (`answer_statuses`)


# to do: a claim never seen, or every claim settled but not committed; skipped: only skipped
# claims left; revealed: committed, a disagreement to reconcile; reconciled: nothing left.
ANSWER_STATUSES = ("to do", "skipped", "revealed", "reconciled")


def answer_statuses_of(rows: Sequence[QueueRow], answers: Sequence[str]) -> list[AnswerStatus]:
    """Each answer's status (`ANSWER_STATUSES`) from its queue rows, in queue order."""
    by_answer: dict[str, list[QueueRow]] = {a: [] for a in answers}
    for r in rows:
        by_answer.setdefault(r.answer_id, []).append(r)
    out = []
    for number, answer_id in enumerate(answers, start=1):
        mine = by_answer[answer_id]
        if mine and all(r.revealed for r in mine):
            status = "revealed" if any(r.disagrees for r in mine) else "reconciled"
        elif any(r.status == "todo" for r in mine) or not any(r.status == "skipped" for r in mine):
            status = "to do"
        else:
            status = "skipped"
        out.append(AnswerStatus(answer_id, number, status, len(mine)))
    return out


def answer_statuses(db: Database, cycle_id: int, reviewer: str) -> list[AnswerStatus]:
    """The reviewer's answers in the cycle with their status, for the answer list."""
    ref = store.review.cycle_row(db, cycle_id)
    answers = queue(db, cycle_id, reviewer)
    questions = store.review.questions(db, answers)
    return [
        replace(a, question=cut_words(questions.get(a.answer_id, ""), QUESTION_LIMIT))
        for a in answer_statuses_of(_queue_rows(db, ref, answers, reviewer), answers)
    ]


QUESTION_LIMIT = 90  # characters of a question the answer list shows beside the answer id


# ---------------------------------------------------------------- reviewer names


def canonical_reviewer(db: Database, typed: str) -> str:
    """The reviewer id for a name typed at sign-in.

    Whitespace is normalised; then, if a known reviewer (a name in `human_labels` or in
    `assignments`) matches ignoring case, that spelling is used, so "anna reviewer" signs
    in as the "Anna Reviewer" whose labels exist. An exact match wins; among several
    spellings differing in case (from before this rule) the one with the most labels.
    Reads the reviewer indexes once, at sign-in.
    """
    name = display_name(typed)
    if not name:
        return name
    counts = store.review.reviewer_names(db)
    if name in counts:
        return name
    key = name.casefold()
    matches = [who for who in counts if display_name(who).casefold() == key]
    if not matches:
        return name
    return min(matches, key=lambda who: (-counts[who], who))


# ---------------------------------------------------------------- writes


def label(
    db: Database,
    *,
    cycle_id: int,
    reviewer: str,
    claim_pk: int,
    kind: str = "blind",
    verdict: Verdict | str | None = None,
    evidence: Sequence[str] = (),
    note: str | None = None,
    duration_ms: int | None = None,
    based_on: store.BasedOn | None = None,
) -> LabelState:
    """Record a blind verdict, a skip or an "unclear" (a new event every time).

    Refused once the answer is committed and revealed (`commit`): from then on only
    `reconcile` changes the reviewer's label, and a lead adjudicates the unclear ones.
    Before the commit any claim may change, also when every claim is settled (the last
    look). `duration_ms`: the time from the card shown to this label. `based_on`: the label
    state the card showed; refused (StaleLabelError) when the label changed since, so a tab
    left open never overwrites what another tab recorded.
    """
    if kind not in BLIND_KINDS:
        raise InputError(f"label kind must be one of {BLIND_KINDS}, not {kind!r}")
    if kind == "blind" and verdict is None:
        raise InputError("a verdict is required")
    if kind != "blind":
        verdict = None
    note = note.strip() if note else None
    with store.write(db):
        store.roster.check_writer(db, reviewer)  # first: a renamed name's queue has moved on with its work
        ref = store.review.cycle_row(db, cycle_id)
        answer_id = store.review.claim_answer(db, claim_pk)
        store.labels.hold_label(db, claim_pk, reviewer)  # the checks below read it as it stays
        _check_in_queue(db, ref, answer_id, reviewer)
        if store.review.answer_revealed(db, answer_id, reviewer):
            raise ConflictError(
                "this answer is committed and the judge is revealed; record a change with reconcile"
            )
        known = store.review.chunk_ids(db, answer_id) if evidence else []
        unknown = [e for e in evidence if e not in known]
        if unknown:
            raise InputError(f"evidence names no chunk of answer {answer_id!r}: {unknown}")
        return store.record_label(
            db,
            claim=claim_pk,
            reviewer=reviewer,
            kind=kind,
            verdict=verdict,
            evidence=list(evidence),
            note=note or None,
            cycle_id=ref.id,
            judge_run_id=ref.judge_run_id,
            duration_ms=None if duration_ms is None else max(0, int(duration_ms)),
            based_on=based_on,
        )


def _at_most_a_day(ms: int) -> int:
    return min(ms, MAX_LABEL_MS)


# A label's time (ms, the claim drawn to the key press): a time over a day is a card left open
# (a night, a weekend), not work; it is kept as a day, since refusing it would refuse the
# verdict with it however often the card sent it again.
LabelMs = Annotated[StoredInt, AfterValidator(_at_most_a_day)]


def missing_evidence(card: Card) -> list[int]:
    """The numbers of the claims the reviewer called SUPPORTED without naming any evidence
    chunk: what a cycle that requires evidence (`CycleRef.require_evidence`) refuses to commit."""
    return [
        c.number
        for c in card.claims
        if c.verdict == Verdict.SUPPORTED and c.label is not None and not c.label.evidence
    ]


def evidence_needed(numbers: Sequence[int]) -> str:
    """Why the commit waits, for the claims `missing_evidence` names (constants and numbers)."""
    many = len(numbers) > 1
    which = ("claims " if many else "claim ") + ", ".join(map(str, numbers))
    return (
        f"This cycle asks for the evidence of every SUPPORTED verdict: {which} "
        f"{'have' if many else 'has'} none. Change it, pick its chunks (E, then a chunk's "
        "number) and give the verdict again."
    )


def evidence_gaps(db: Database, cycle_id: int) -> dict[str, int]:
    """Reviewer -> their labels of the cycle with the final verdict SUPPORTED and no evidence
    chunk (the lead's table shows it before any export needs the sources)."""
    return store.review.supported_without_evidence(db, cycle_id)


def commit(db: Database, *, cycle_id: int, reviewer: str, answer_id: str) -> None:
    """Commit the answer's blind labels after the last look: from now on the judge is revealed
    to the reviewer and the blind labels are frozen. Refused unless every claim of the answer
    has the reviewer's verdict or unclear mark, and, in a cycle that requires evidence, unless
    every SUPPORTED verdict names its evidence (`missing_evidence`); committing again changes
    nothing."""
    with store.write(db):
        store.roster.check_writer(db, reviewer)
        ref = store.review.cycle_row(db, cycle_id)
        store.review.hold_answer_labels(db, answer_id, reviewer)  # the checks below read them as they stay
        _check_in_queue(db, ref, answer_id, reviewer)
        if not store.review.answer_settled(db, answer_id, reviewer):
            raise NotRevealedError(
                "give every claim of the answer a verdict (or mark it unclear) before committing"
            )
        if ref.require_evidence and not store.review.answer_revealed(db, answer_id, reviewer):
            missing = missing_evidence(load_card(db, answer_id, reviewer))
            if missing:
                raise ConflictError(evidence_needed(missing))
        store.review.record_reveal(db, answer_id, reviewer, ref.id)


# ---------------------------------------------------------------- reveal and reconcile


@dataclass(frozen=True, slots=True)
class Revealed:
    claim: Claim
    judge_verdict: str | None  # None: no verdict from the run, or withheld (unclear, not settled)
    rationale: str | None
    judge_evidence: tuple[str, ...]
    adjudicated: str | None = None  # a lead's decision on the claim, if any

    @property
    def unclear(self) -> bool:
        """Marked unclear by the reviewer: waits for a lead, nothing to reconcile."""
        return self.claim.status == "unclear"

    @property
    def blind(self) -> str | None:
        return self.claim.label.blind_verdict if self.claim.label else None

    @property
    def final(self) -> str | None:
        return self.claim.label.final_verdict if self.claim.label else None

    @property
    def reconciled(self) -> str | None:
        return self.claim.label.reconciled if self.claim.label else None

    @property
    def disagrees(self) -> bool:
        """The blind verdict differs from the judge's (whatever was reconciled since).
        Never for an unclear claim: it has no blind verdict."""
        return self.blind is not None and self.judge_verdict is not None and self.judge_verdict != self.blind

    @property
    def pending(self) -> bool:
        """A disagreement not reconciled yet."""
        return self.disagrees and self.reconciled is None


def reveal(db: Database, *, cycle_id: int, answer_id: str, reviewer: str) -> list[Revealed]:
    """The judge's verdicts and rationales beside the reviewer's labels, one per claim.

    Raises NotRevealedError unless the reviewer committed the answer (`commit`). A claim the
    reviewer marked unclear comes without the judge's verdict, rationale and evidence until a
    lead adjudicates it; then with both.
    """
    ref = store.review.cycle_row(db, cycle_id)
    card = load_card(db, answer_id, reviewer)
    if not card.revealed:
        missing = sum(not c.settled for c in card.claims)
        raise NotRevealedError(
            f"commit answer {answer_id!r} first ({plural(missing, 'claim')} without a verdict)"
        )
    judged = store.review.reveal_verdicts(db, ref.judge_run_id, answer_id)
    adjudicated = store.review.reveal_adjudications(db, answer_id)
    out = []
    for c in card.claims:
        verdict, rationale, ev = judged.get(c.pk, (None, None, ()))
        lead = adjudicated.get(c.pk)
        if c.status == "unclear" and lead is None:
            verdict, rationale, ev = None, None, ()  # unclear stays blind until a lead settles it
        out.append(Revealed(c, verdict, rationale, ev, lead))
    return out


def reconcile(
    db: Database,
    *,
    cycle_id: int,
    reviewer: str,
    claim_pk: int,
    choice: str,
    based_on: store.BasedOn | None = None,
) -> LabelState:
    """After the reveal, settle a disagreement: `keep` (judge error) or `judge_right` (slip).

    A change of mind is a new event; repeating the current choice records nothing. `based_on`:
    as for `label` (a choice made on a stale view of the label is refused).
    """
    if choice not in RECONCILE_KINDS:
        raise InputError(f"choice must be one of {RECONCILE_KINDS}, not {choice!r}")
    with store.write(db):
        store.roster.check_writer(db, reviewer)
        ref = store.review.cycle_row(db, cycle_id)
        answer_id = store.review.claim_answer(db, claim_pk)
        store.labels.hold_label(db, claim_pk, reviewer)  # the checks below read it as it stays
        _check_in_queue(db, ref, answer_id, reviewer)
        if not store.review.answer_revealed(db, answer_id, reviewer):
            raise NotRevealedError("commit the answer's verdicts before reconciling")
        state = store.label_state(db, claim_pk, reviewer)
        judge = store.review.judge_verdict(db, ref.judge_run_id, claim_pk)
        if judge is None:
            raise NotFoundError("the judge gave no verdict on this claim")
        assert state is not None
        if state.status != "labeled" or state.blind_verdict is None:
            raise ConflictError(
                "this claim is marked unclear: it waits for a lead's decision, there is nothing to reconcile"
            )
        if judge == state.blind_verdict:
            raise ConflictError("you and the judge agree on this claim: nothing to reconcile")
        if state.reconciled == choice:
            return state  # the same choice again (a double key press): nothing changes
        return store.record_label(
            db,
            claim=claim_pk,
            reviewer=reviewer,
            kind=choice,
            cycle_id=ref.id,
            judge_run_id=ref.judge_run_id,
            based_on=based_on,
        )


# ---------------------------------------------------------------- the page's rules (pure)


def shown_claim(card: Card, wanted: int | None) -> int | None:
    """The claim the card shows, or None for the answer-wide view (`card_view`).

    A committed answer always shows the reveal, whatever was asked for: its blind labels are
    frozen. Before the commit, `wanted` when it is a claim of the answer (also during the
    last look, to change a verdict); else the next claim to settle; None (the last look)
    when every claim is settled.
    """
    if card.revealed:
        return None
    if wanted is not None and 0 <= wanted < len(card.claims):
        return wanted
    return None if card.complete else card.next_open()


def card_view(card: Card, index: int | None) -> str:
    """'claim' (a claim to label), 'last look' (every claim settled, not committed) or
    'reveal' (committed: the judge beside the reviewer), for `index` from `shown_claim`."""
    if card.revealed:
        return "reveal"
    return "claim" if index is not None else "last look"


def selected_disagreement(rows: Sequence[Revealed], wanted: int | None) -> int | None:
    """The disagreement (claim pk) K / J act on in the reveal: `wanted` if it is one, else the
    first still pending, else the first; None when the reviewer and the judge agree throughout."""
    disagreements = [r for r in rows if r.disagrees]
    if any(r.claim.pk == wanted for r in disagreements):
        return wanted
    first = next((r for r in disagreements if r.pending), disagreements[0] if disagreements else None)
    return first.claim.pk if first else None


def selection_after_reconcile(rows: Sequence[Revealed], claim_pk: int) -> int:
    """The disagreement to select after reconciling `claim_pk` (`rows` read after the write):
    the next one still pending after it, wrapping, so K / J walk through them; with none left,
    `claim_pk` itself, so K / J change the choice just made."""
    pks = [r.claim.pk for r in rows]
    at = pks.index(claim_pk) if claim_pk in pks else 0
    after = [*rows[at + 1 :], *rows[:at]]
    return next((r.claim.pk for r in after if r.pending), claim_pk)


@dataclass(frozen=True, slots=True)
class RevealView:
    """What the reveal panel shows and which keys it offers (`reveal_view`)."""

    selected: int | None  # the claim pk K / J act on; None: no disagreement
    disagreements: tuple[int, ...]  # claim pks, answer order
    agree: int  # claims the reviewer labeled and the judge judged, on which they agree
    compared: int  # claims with both a blind verdict and a judge verdict
    unclear: int  # marked unclear: waiting for a lead
    pending: int  # disagreements not reconciled yet

    @property
    def can_move_on(self) -> bool:
        """The next answer is offered once every disagreement is reconciled."""
        return self.pending == 0


def why_not_next(view: RevealView, numbers: dict[int, int]) -> str | None:
    """Why the next-answer key cannot act yet (None when it can): the first pending
    disagreement by claim number (`numbers`: claim pk -> number). Constant text and numbers."""
    if view.can_move_on:
        return None
    first = view.selected if view.selected is not None else view.disagreements[0]
    return (
        f"Claim {numbers.get(first, 1)} still needs your decision: K keeps your verdict, "
        "J takes the judge's. Then N goes to the next answer."
    )


def reveal_view(rows: Sequence[Revealed], wanted: int | None) -> RevealView:
    """The reveal panel of an answer: the selected disagreement (`selected_disagreement`), the
    disagreements the arrow keys walk through, and the counts the panel states."""
    selected = selected_disagreement(rows, wanted)
    disagreements = tuple(r.claim.pk for r in rows if r.disagrees)
    compared = [r for r in rows if r.blind is not None and r.judge_verdict is not None]
    return RevealView(
        selected,
        disagreements,
        agree=sum(not r.disagrees for r in compared),
        compared=len(compared),
        unclear=sum(r.unclear for r in rows),
        pending=sum(r.pending for r in rows),
    )


# ---------------------------------------------------------------- definitions and guidelines

_DEFINITION = re.compile(r"^\s*[-*]\s*(SUPPORTED|CONTRADICTED|UNSUPPORTED)\s*:\s*(.+?)\s*$", re.MULTILINE)


def verdict_definitions(template: str) -> dict[str, str]:
    """The verdict definitions a judge prompt template gives, as "- VERDICT: text" lines
    (the form of `prompts/grounding-v1.txt`); verdicts it does not define are absent."""
    out: dict[str, str] = {}
    for verdict, text in _DEFINITION.findall(template):
        out.setdefault(verdict, text[0].upper() + text[1:])
    return out


_PROMPTS = Path(__file__).resolve().parent / "prompts"
SHIPPED_PROMPT = "grounding-v1.txt"  # the template imported judge runs are taken to follow


@functools.cache
def _shipped_definitions() -> dict[str, str]:
    return verdict_definitions((_PROMPTS / SHIPPED_PROMPT).read_text(encoding="utf-8"))


def judge_definitions(db: Database, run_id: int) -> dict[str, str]:
    """The verdict definitions shown to reviewers: those of the prompt the cycle's judge run
    used (a judge-lab run keeps its template), else of the shipped grounding prompt."""
    return {**_shipped_definitions(), **verdict_definitions(store.guidelines.run_template(db, run_id) or "")}


def guidelines_for(db: Database, cycle_id: int) -> list[store.guidelines.Guidelines]:
    """The lead's guidelines that apply in a cycle: the project's, then the cycle's own."""
    found = (
        store.guidelines.get_guidelines(db, store.guidelines.PROJECT_SCOPE),
        store.guidelines.get_guidelines(db, store.guidelines.cycle_scope(cycle_id)),
    )
    return [g for g in found if g is not None]


def guideline_summary(markdown: str, limit: int = 280) -> str:
    """The short version of a lead's guidelines shown under the buttons: the first paragraph
    (up to the first blank line), cut at `limit` characters on a word boundary."""
    para: list[str] = []
    for line in markdown.strip().splitlines():
        if not line.strip():
            if para:
                break
            continue
        para.append(line.strip())
    return cut_words(" ".join(para), limit)


def cut_words(text: str, limit: int) -> str:
    """`text` on one line (runs of whitespace as one space), cut at `limit` characters on a
    word boundary, with " …" when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " …"


# ---------------------------------------------------------------- highlighting


def _loose_pattern(text: str) -> re.Pattern[str] | None:
    words = text.split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def find_claim(answer: str, claim: str, start: int = 0) -> tuple[int, int] | None:
    """Span of `claim` in `answer`: exact first, then ignoring case and runs of whitespace.

    Searches from `start`, then from the beginning; None when the claim is a paraphrase.
    """
    for origin in dict.fromkeys((start, 0)):
        i = answer.find(claim, origin)
        if i >= 0 and claim:
            return i, i + len(claim)
    pattern = _loose_pattern(claim)
    if pattern is not None:
        for origin in dict.fromkeys((start, 0)):
            m = pattern.search(answer, origin)
            if m:
                return m.start(), m.end()
    return None


def claim_spans(answer: str, claims: Sequence[str]) -> list[tuple[int, int] | None]:
    """Spans of the claims in order, each searched after the previous one found, so a claim
    repeated in the answer is highlighted at its own place."""
    spans: list[tuple[int, int] | None] = []
    pos = 0
    for text in claims:
        span = find_claim(answer, text, pos)
        spans.append(span)
        if span is not None and span[0] >= pos:
            pos = span[1]
    return spans


__all__ = [
    "ANSWER_STATUSES",
    "AnswerStatus",
    "Card",
    "Chunk",
    "Claim",
    "CycleChoice",
    "CycleRef",
    "NotRevealedError",
    "Position",
    "QueueProgress",
    "RevealView",
    "Revealed",
    "answer_statuses",
    "answer_statuses_of",
    "canonical_reviewer",
    "card_view",
    "claim_spans",
    "commit",
    "cut_words",
    "cycle",
    "cycle_choices",
    "default_cycle",
    "evidence_gaps",
    "evidence_needed",
    "find_claim",
    "guideline_summary",
    "guidelines_for",
    "judge_definitions",
    "label",
    "load_card",
    "missing_evidence",
    "next_cycle_with_work",
    "open_cycles",
    "progress",
    "queue",
    "reconcile",
    "resume",
    "reveal",
    "reveal_view",
    "selected_disagreement",
    "selection_after_reconcile",
    "shown_claim",
    "verdict_definitions",
    "why_not_next",
    "why_this_cycle",
]


def answer_facts(card: Card) -> list[str]:
    """Seed 003's checks of the answer against its question, as plain sentences for the card:
    facts about its script (another script than the question's; CJK characters where the
    question has none), never verdicts. Empty when nothing is flagged."""
    return list(_answer_facts(card.question, card.answer))


@functools.lru_cache(maxsize=64)
def _answer_facts(question: str, answer: str) -> tuple[str, ...]:
    # Kept for the answers on screen: the card's data is built again on every key press, and
    # counting the scripts of a long answer each time cost more than the rest of the data.
    from .checks import check_answer

    return tuple(check_answer(question, answer).facts())
