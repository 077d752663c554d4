"""The review card's protocol: one request per key that writes, and the answer as the card shows it.

The card (calibration_app/components/review_card.js) sends one request per key that writes, to
one route (calibration_app/card_route.py): a claim's verdict, skip or unclear with its evidence
and note (`LabelRequest`), the commit (`CommitRequest`), a reconcile choice
(`ReconcileRequest`), the next answer (`NextRequest`). `handle` does it with the rules of
`calibration.review` and says what the card shows next (`Reply`).

Each request names the view it was made on: the label event the card showed for the claim
(`base`), or for a commit every claim's (`seen`). A request made on a view that has changed
since (another tab labeled the claim) is refused with the sentence a reviewer understands and
the answer as it is now, never written over. Each write happens once: a request sent again
(a lost reply) finds its own label already there and is acknowledged without a second event.

Blind until the commit: the judge's verdicts are read (`review.reveal`) only for an answer the
reviewer committed; before it the card gets the answer, its claims with the reviewer's own
labels and the chunks' ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from . import review, store
from .errors import CalibrationError, SignedOutError, StaleLabelError, StorageError
from .models import BodyText, StoredInt, Verdict
from .store import Database, LabelState
from .text import cut, visible
from .text import neutralise_body as neutral

# Characters of a chunk the card gets at first; the rest on request ("Show the chunks in full").
CHUNK_CHARS = 10_000
CardId = Annotated[str, Field(max_length=review.MAX_CARD_ID)]
STALE_VIEW = (
    "this answer changed in another tab since this one showed it — showing it now: look at it "
    "again, then commit"
)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    answer: CardId  # the answer the card shows


class LabelRequest(_Request):
    """1 / 2 / 3, S or U on a claim: its verdict, skip or unclear, with the evidence and note."""

    do: Literal["label"]
    claim: StoredInt
    kind: Literal["blind", "skip", "unclear"]
    verdict: Verdict | None = None
    evidence: tuple[CardId, ...] = Field((), max_length=200)
    note: BodyText | None = Field(None, max_length=2000)
    base: StoredInt | None = None  # the label event the card showed for the claim
    ms: review.LabelMs | None = None  # from the claim drawn to the key press


class CommitRequest(_Request):
    """Enter at the last look: commit the answer as the card showed it (`seen`)."""

    do: Literal["commit"]
    seen: dict[StoredInt, StoredInt | None] = Field(default_factory=dict, max_length=500)


class ReconcileRequest(_Request):
    """K or J after the reveal: keep the verdict (a judge error) or take the judge's (a slip)."""

    do: Literal["reconcile"]
    claim: StoredInt
    choice: Literal["keep", "judge_right"]
    base: StoredInt | None = None


class NextRequest(_Request):
    """N after the reveal (or only skipped claims left): the next answer of the queue."""

    do: Literal["next"]


Request = Annotated[LabelRequest | CommitRequest | ReconcileRequest | NextRequest, Field(discriminator="do")]


@dataclass(frozen=True, slots=True)
class Reply:
    """What the card shows after a request: `refused`, the sentence why nothing was done;
    `event`, the label event written (or found: the same request again); `view`, the answer
    as it is now (`answer_view`), when the card cannot draw it from what it holds; `done`,
    the reviewer's queue in the cycle is done."""

    refused: str | None = None
    event: int | None = None
    view: dict[str, Any] | None = None
    done: bool = False

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.refused is None}
        for name in ("refused", "event", "view"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.done:
            out["done"] = True
        return out


def handle(db: Database, *, cycle_id: int, reviewer: str, request: Request) -> Reply:
    """Do the request as `reviewer` in the cycle. A rule's refusal is a `Reply.refused`; a
    storage failure raises StorageError (nothing written), a name a lead deactivated or renamed
    SignedOutError."""
    try:
        if isinstance(request, LabelRequest):
            return _label(db, cycle_id, reviewer, request)
        if isinstance(request, CommitRequest):
            return _commit(db, cycle_id, reviewer, request)
        if isinstance(request, ReconcileRequest):
            return _reconcile(db, cycle_id, reviewer, request)
        return _next(db, cycle_id, reviewer, request)
    except (StorageError, SignedOutError):
        raise
    except CalibrationError as exc:  # a rule refused it: the card shows the answer as it is now
        return Reply(refused=str(exc), view=_view_or_none(db, cycle_id, reviewer, request.answer))


def _label(db: Database, cycle_id: int, reviewer: str, req: LabelRequest) -> Reply:
    try:
        state = review.label(
            db,
            cycle_id=cycle_id,
            reviewer=reviewer,
            claim_pk=req.claim,
            kind=req.kind,
            verdict=req.verdict,
            evidence=req.evidence,
            note=req.note,
            duration_ms=req.ms,
            based_on=store.BasedOn(req.base),
        )
    except StaleLabelError:
        current = store.label_state(db, req.claim, reviewer)
        if current is None or not _same_label(current, req):
            raise
        state = current  # the same request again (its reply was lost): written once already
    if not review.cycle(db, cycle_id).require_evidence:
        return Reply(event=state.event_id)
    # What the commit waits for changes with each verdict: the card shows it as it is now.
    card = review.load_card(db, req.answer, reviewer)
    return Reply(event=state.event_id, view=answer_view(db, cycle_id, reviewer, card))


def _same_label(state: LabelState, req: LabelRequest) -> bool:
    """Whether the label as stored is what `req` asks for."""
    status = {"blind": "labeled", "skip": "skipped", "unclear": "unclear"}[req.kind]
    return (
        state.status == status
        and (req.kind != "blind" or state.blind_verdict == req.verdict)
        and tuple(state.evidence) == req.evidence
        and (state.note or None) == ((req.note or "").strip() or None)
    )


def _commit(db: Database, cycle_id: int, reviewer: str, req: CommitRequest) -> Reply:
    card = review.load_card(db, req.answer, reviewer)
    shown = {c.pk: (c.label.event_id if c.label else None) for c in card.claims}
    if not card.revealed and any(req.seen.get(pk) != event for pk, event in shown.items()):
        return Reply(refused=STALE_VIEW, view=answer_view(db, cycle_id, reviewer, card))
    review.commit(db, cycle_id=cycle_id, reviewer=reviewer, answer_id=req.answer)
    return Reply(view=answer_view(db, cycle_id, reviewer, review.load_card(db, req.answer, reviewer)))


def _reconcile(db: Database, cycle_id: int, reviewer: str, req: ReconcileRequest) -> Reply:
    state = review.reconcile(
        db,
        cycle_id=cycle_id,
        reviewer=reviewer,
        claim_pk=req.claim,
        choice=req.choice,
        based_on=store.BasedOn(req.base),
    )
    rows = review.reveal(db, cycle_id=cycle_id, answer_id=req.answer, reviewer=reviewer)
    selected = review.selection_after_reconcile(rows, req.claim)
    view = answer_view(db, cycle_id, reviewer, review.load_card(db, req.answer, reviewer), selected=selected)
    return Reply(event=state.event_id, view=view)


def _next(db: Database, cycle_id: int, reviewer: str, req: NextRequest) -> Reply:
    """After the reveal, once every disagreement is settled; before it, when only skipped claims
    are left in the answer (they come back at the end of the queue)."""
    if review.load_card(db, req.answer, reviewer).revealed:
        rows = review.reveal(db, cycle_id=cycle_id, answer_id=req.answer, reviewer=reviewer)
        numbers = {r.claim.pk: r.claim.number for r in rows}
        why_not = review.why_not_next(review.reveal_view(rows, None), numbers)
        if why_not is not None:
            return Reply(refused=why_not)
    place = review.queue_place(db, cycle_id, reviewer, after=req.answer)
    pos = place.position
    if pos is None:
        return Reply(done=True)
    card = review.load_card(db, pos.answer_id, reviewer)
    return Reply(view=answer_view(db, cycle_id, reviewer, card, index=pos.claim_index, place=place))


def _view_or_none(db: Database, cycle_id: int, reviewer: str, answer_id: str) -> dict[str, Any] | None:
    """The answer's view after a refusal; None when it cannot be read (not in the queue, say)."""
    try:
        return answer_view(db, cycle_id, reviewer, review.load_card(db, answer_id, reviewer))
    except (StorageError, SignedOutError):
        raise
    except CalibrationError:
        return None


# ---------------------------------------------------------------- the answer as the card shows it


def answer_view(
    db: Database,
    cycle_id: int,
    reviewer: str,
    card: review.Card,
    *,
    index: int | None = None,
    selected: int | None = None,
    full_chunks: bool = False,
    place: review.QueuePlace | None = None,
) -> dict[str, Any]:
    """The answer as the card draws it (JSON): the question, the answer, its claims with the
    reviewer's own labels, the chunks (each cut to `CHUNK_CHARS` unless `full_chunks`), the
    reviewer's progress in the cycle; `index`, the claim to show first (None: the card's
    choice). Once the reviewer committed it, also the judge beside each claim (`reveal`),
    `selected` the disagreement K / J act on. `card`: the answer as `review.load_card` read it
    for the reviewer. Untrusted text goes as text; the card puts it into the page as text
    only. `place`: the reviewer's queue as `review.queue_place` read it (else read here)."""
    cycle = review.cycle(db, cycle_id)
    shown = review.shown_claim(card, index)
    missing = review.missing_evidence(card) if cycle.require_evidence else []
    place = place or review.queue_place(db, cycle_id, reviewer)
    view: dict[str, Any] = {
        "answer": card.answer_id,
        "mode": review.card_view(card, shown),
        "index": shown,
        "question": neutral(card.question),
        "answer_text": neutral(card.answer),
        "show_answer": len(card.claims) != 1 or card.answer.strip() != card.claims[0].text.strip(),
        "spans": review.claim_spans(neutral(card.answer), [neutral(c.text) for c in card.claims]),
        "facts": review.answer_facts(card),
        "claims": [_claim(c) for c in card.claims],
        "chunks": [_chunk(ch, full_chunks) for ch in card.chunks],
        "progress": _progress(place.progress, place.number(card.answer_id), len(place.answers)),
        "require_evidence": cycle.require_evidence,
        "evidence_needed": review.evidence_needed(missing) if missing else None,
    }
    if card.revealed:  # the judge's data is read here and nowhere else, once committed
        rows = review.reveal(db, cycle_id=cycle_id, answer_id=card.answer_id, reviewer=reviewer)
        view["reveal"] = _reveal(rows, review.reveal_view(rows, selected))
    return view


def _claim(c: review.Claim) -> dict[str, Any]:
    label = c.label
    return {
        "pk": c.pk,
        "number": c.number,
        "text": neutral(c.text),
        "status": c.status,
        "verdict": c.verdict,
        "event": label.event_id if label else None,
        "evidence": list(label.evidence) if label else [],
        "note": (label.note or "") if label else "",
    }


def _chunk(ch: review.Chunk, full: bool) -> dict[str, Any]:
    # A chunk of a megabyte made every draw of the card slow: the rest comes on request.
    text, more = (ch.text, 0) if full else cut(ch.text, CHUNK_CHARS)
    return {
        "number": ch.number,
        "id": ch.chunk_id,  # sent back as evidence, never shown: the card shows `shown`
        "shown": visible(ch.chunk_id),
        "source": visible(ch.source) if ch.source else None,
        "text": neutral(text),
        "more": more,
        "long": len(ch.text) > CHUNK_CHARS,
    }


def _progress(p: review.QueueProgress, number: int, answers: int) -> dict[str, Any]:
    """The reviewer's queue as the card's progress line counts it (review_card.js `progressText`),
    as of this view: the card adds what its own keys changed since."""
    return {
        "labeled": p.claims_labeled,
        "unclear": p.claims_unclear,
        "skipped": p.claims_skipped,
        "total": p.claims_total,
        "answers_done": p.answers_done,
        "answers_total": p.answers_total,
        "reused": p.reused_note(),
        "number": number,
        "answers": answers,
    }


def _reveal(rows: list[review.Revealed], view: review.RevealView) -> dict[str, Any]:
    numbers = {r.claim.pk: r.claim.number for r in rows}
    return {
        "rows": [
            {
                "pk": r.claim.pk,
                "blind": r.blind,
                "judge": r.judge_verdict,
                "hidden": r.unclear and not r.adjudicated,
                "adjudicated": r.adjudicated,
                "rationale": neutral(r.rationale) if r.rationale else None,
                "judge_evidence": [visible(e) for e in r.judge_evidence],
                "final": r.final,
                "reconciled": r.reconciled,
                "disagrees": r.disagrees,
                "pending": r.pending,
            }
            for r in rows
        ],
        "selected": view.selected,
        "disagreements": list(view.disagreements),
        "agree": view.agree,
        "compared": view.compared,
        "unclear": view.unclear,
        "why_not_next": review.why_not_next(view, numbers),
    }


def view_text(view: dict[str, Any]) -> str:
    """The view as one JSON text (Streamlit looks for a dataframe in every value at the top of
    a component's data, a look that costs up to a millisecond for each list or dict)."""
    return json.dumps(view, separators=(",", ":"))
