"""The review workflow (calibration.review): blind labels, resume, reveal, reconcile, highlighting."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from calibration import cycles, review, store
from calibration.errors import ConflictError, InputError, StaleLabelError
from calibration.importing import import_answers
from calibration.store import Database
from calibration.store.review import QueueRow

RUN = "judge-x@v1"

ANSWERS = [
    {
        "id": "A1",
        "question": "When does delivery start?",
        "answer": "Delivery takes 10 working days.  It starts after   payment. Pickup is on Tuesdays.",
        "chunks": [
            {"id": "S1", "text": "Standard delivery: 10 working days after payment.", "source": "kb/S1"},
            {"id": "S3", "text": "Pickup Tuesday to Thursday.", "source": "kb/S3"},
        ],
        "claims": [
            {
                "id": "c1",
                "claim": "Delivery takes 10 working days.",
                "verdict": "SUPPORTED",
                "rationale": "RATIONALE-A1-c1",
                "evidence": ["S1"],
            },
            {
                "id": "c2",
                "claim": "it starts after payment.",
                "verdict": "SUPPORTED",
                "rationale": "RATIONALE-A1-c2",
            },
            {
                "id": "c3",
                "claim": "Pickup is on Mondays.",
                "verdict": "CONTRADICTED",
                "rationale": "RATIONALE-A1-c3",
                "evidence": ["S3"],
            },
        ],
    },
    {
        "id": "A2",
        "question": "Who approves an 8% discount?",
        "answer": "The sales head approves it.",
        "chunks": ["Up to 5%: the sales head; above 5%: the CFO."],
        "claims": [
            {
                "id": "c1",
                "claim": "The sales head approves it.",
                "verdict": "SUPPORTED",
                "rationale": "RATIONALE-A2-c1",
            },
            {
                "id": "c2",
                "claim": "An 8% discount needs approval.",
                "verdict": "UNSUPPORTED",
                "rationale": "RATIONALE-A2-c2",
            },
        ],
    },
]


def _load(db: Database, tmp_path: Path, reviewers: list[str] | None = None) -> cycles.Cycle:
    path = tmp_path / "answers.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for rec in ANSWERS:
            fh.write(
                json.dumps(
                    {**rec, "judge_model": "judge-x", "judge_prompt_version": "v1"}, ensure_ascii=False
                )
                + "\n"
            )
    import_answers(db, path)
    return cycles.create_cycle(
        db,
        name="c",
        judge_run=RUN,
        size=2,
        seed=3,
        strategy="random",
        reviewers=reviewers or [],
        overlap=0.0,
        force=True,
        created_by="t",
    )


@pytest.fixture
def cyc(fresh_db: Database, tmp_path: Path) -> cycles.Cycle:
    return _load(fresh_db, tmp_path)


def _pk(db: Database, answer: str, claim: str) -> int:
    return store.claim_pk(db, answer, claim)


def _label_all(
    db: Database, cycle_id: int, reviewer: str, answer: str, verdicts: list[str], *, commit: bool = True
) -> None:
    """Verdicts on every claim of the answer, then (by default) the commit that reveals it."""
    card = review.load_card(db, answer, reviewer)
    for claim, verdict in zip(card.claims, verdicts, strict=True):
        review.label(db, cycle_id=cycle_id, reviewer=reviewer, claim_pk=claim.pk, verdict=verdict)
    if commit:
        review.commit(db, cycle_id=cycle_id, reviewer=reviewer, answer_id=answer)


# ---------------------------------------------------------------- the card is blind


@pytest.mark.sqlite_only  # reads the statements through SQLite's trace callback
def test_card_shows_everything_but_the_judge(fresh_db: Database, cyc: cycles.Cycle) -> None:
    sql: list[str] = []
    fresh_db.conn.set_trace_callback(sql.append)
    card = review.load_card(fresh_db, "A1", "ann")
    fresh_db.conn.set_trace_callback(None)
    assert not any("judge_verdicts" in s for s in sql), "the card must never read the judge"
    assert [c.claim_id for c in card.claims] == ["c1", "c2", "c3"]
    assert [(c.number, c.chunk_id, c.source) for c in card.chunks] == [(1, "S1", "kb/S1"), (2, "S3", "kb/S3")]
    assert all(c.status == "todo" and c.verdict is None for c in card.claims)
    assert not card.complete
    assert "RATIONALE" not in repr(card)
    bare = review.load_card(fresh_db, "A2", "ann")
    assert [(c.chunk_id, c.source) for c in bare.chunks] == [("1", None)]


def test_reveal_refused_until_every_claim_has_a_verdict(fresh_db: Database, cyc: cycles.Cycle) -> None:
    card = review.load_card(fresh_db, "A1", "ann")
    with pytest.raises(review.NotRevealedError):
        review.reveal(fresh_db, cycle_id=cyc.id, answer_id="A1", reviewer="ann")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=card.claims[0].pk, verdict="SUPPORTED")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=card.claims[1].pk, kind="skip")
    review.label(
        fresh_db,
        cycle_id=cyc.id,
        reviewer="ann",
        claim_pk=card.claims[2].pk,
        kind="unclear",
        note="ask the lead",
    )
    with pytest.raises(review.NotRevealedError, match="1 claim without a verdict"):
        review.reveal(fresh_db, cycle_id=cyc.id, answer_id="A1", reviewer="ann")
    with pytest.raises(review.NotRevealedError, match="before committing"):
        review.commit(fresh_db, cycle_id=cyc.id, reviewer="ann", answer_id="A1")
    # Another reviewer's labels do not reveal anything to ann.
    _label_all(fresh_db, cyc.id, "bob", "A1", ["SUPPORTED"] * 3)
    with pytest.raises(review.NotRevealedError):
        review.reveal(fresh_db, cycle_id=cyc.id, answer_id="A1", reviewer="ann")
    # A changed mind before the reveal: the unclear claim gets a verdict after all.
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=card.claims[2].pk, verdict="SUPPORTED")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=card.claims[1].pk, verdict="UNSUPPORTED")
    # Every claim settled: the last look. Nothing is revealed yet and any verdict may change.
    assert review.load_card(fresh_db, "A1", "ann").complete
    with pytest.raises(review.NotRevealedError, match="commit"):
        review.reveal(fresh_db, cycle_id=cyc.id, answer_id="A1", reviewer="ann")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=card.claims[1].pk, verdict="SUPPORTED")
    review.commit(fresh_db, cycle_id=cyc.id, reviewer="ann", answer_id="A1")
    review.commit(fresh_db, cycle_id=cyc.id, reviewer="ann", answer_id="A1")  # a repeat: no-op
    assert review.load_card(fresh_db, "A1", "ann").revealed
    assert not review.load_card(fresh_db, "A1", "carl").revealed
    kinds = [(e["kind"], e["verdict"]) for e in store.label_history(fresh_db, card.claims[1].pk, "ann")]
    assert kinds == [("skip", None), ("blind", "UNSUPPORTED"), ("blind", "SUPPORTED")]
    rows = review.reveal(fresh_db, cycle_id=cyc.id, answer_id="A1", reviewer="ann")
    assert [(r.blind, r.judge_verdict, r.rationale) for r in rows] == [
        ("SUPPORTED", "SUPPORTED", "RATIONALE-A1-c1"),
        ("SUPPORTED", "SUPPORTED", "RATIONALE-A1-c2"),
        ("SUPPORTED", "CONTRADICTED", "RATIONALE-A1-c3"),
    ]
    assert [r.pending for r in rows] == [False, False, True]
    assert rows[0].judge_evidence == ("S1",)


def test_blind_verdicts_freeze_once_revealed(fresh_db: Database, cyc: cycles.Cycle) -> None:
    _label_all(fresh_db, cyc.id, "ann", "A2", ["SUPPORTED", "SUPPORTED"])
    pk = _pk(fresh_db, "A2", "c2")
    with pytest.raises(ConflictError, match="reconcile"):
        review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, verdict="UNSUPPORTED")
    with pytest.raises(ConflictError):
        review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, kind="skip")
    assert store.label_state(fresh_db, pk, "ann").blind_verdict == "SUPPORTED"


def test_changed_verdict_is_a_new_event(fresh_db: Database, cyc: cycles.Cycle) -> None:
    pk = _pk(fresh_db, "A1", "c1")
    review.label(
        fresh_db,
        cycle_id=cyc.id,
        reviewer="ann",
        claim_pk=pk,
        verdict="SUPPORTED",
        evidence=["S1"],
        note="  first  ",
    )
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, verdict="UNSUPPORTED")
    events = store.label_history(fresh_db, pk, "ann")
    assert [(e["kind"], e["verdict"], e["cycle_id"]) for e in events] == [
        ("blind", "SUPPORTED", cyc.id),
        ("blind", "UNSUPPORTED", cyc.id),
    ]
    assert events[0]["note"] == "first" and json.loads(events[0]["evidence"]) == ["S1"]
    assert store.label_state(fresh_db, pk, "ann").blind_verdict == "UNSUPPORTED"


def test_label_checks_its_input(fresh_db: Database, cyc: cycles.Cycle) -> None:
    pk = _pk(fresh_db, "A1", "c1")
    with pytest.raises(InputError, match="evidence"):
        review.label(
            fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, verdict="SUPPORTED", evidence=["S2"]
        )
    with pytest.raises(InputError):
        review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk)
    with pytest.raises(InputError, match="unknown verdict"):
        review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, verdict="MAYBE")
    assert store.label_history(fresh_db, pk) == []


def test_label_only_in_the_reviewers_queue_of_an_open_cycle(fresh_db: Database, tmp_path: Path) -> None:
    cyc = _load(fresh_db, tmp_path, reviewers=["ann", "bob"])
    ann, bob = review.queue(fresh_db, cyc.id, "ann"), review.queue(fresh_db, cyc.id, "bob")
    assert len(ann) == len(bob) == 1 and ann != bob
    pk = review.load_card(fresh_db, bob[0], "ann").claims[0].pk
    with pytest.raises(ConflictError, match="queue"):
        review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, verdict="SUPPORTED")
    assert [c.name for c in review.open_cycles(fresh_db, "ann")] == ["c"]
    assert review.open_cycles(fresh_db, "eve") == []
    cycles.close_cycle(fresh_db, "c", snapshot={}, force=True)
    with pytest.raises(ConflictError, match="closed"):
        review.label(fresh_db, cycle_id=cyc.id, reviewer="bob", claim_pk=pk, verdict="SUPPORTED")


def test_two_reviewers_keep_their_own_labels(fresh_db: Database, cyc: cycles.Cycle) -> None:
    pk = _pk(fresh_db, "A1", "c1")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, verdict="SUPPORTED")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="bob", claim_pk=pk, verdict="CONTRADICTED")
    assert store.label_state(fresh_db, pk, "ann").blind_verdict == "SUPPORTED"
    assert store.label_state(fresh_db, pk, "bob").blind_verdict == "CONTRADICTED"


# ---------------------------------------------------------------- reconcile


def test_reconcile_keep_and_judge_right(fresh_db: Database, cyc: cycles.Cycle) -> None:
    pk1, pk2 = _pk(fresh_db, "A2", "c1"), _pk(fresh_db, "A2", "c2")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk1, verdict="CONTRADICTED")
    with pytest.raises(review.NotRevealedError):
        review.reconcile(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk1, choice="keep")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk2, verdict="SUPPORTED")
    with pytest.raises(review.NotRevealedError, match="commit"):  # settled, not committed yet
        review.reconcile(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk1, choice="keep")
    review.commit(fresh_db, cycle_id=cyc.id, reviewer="ann", answer_id="A2")

    keep = review.reconcile(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk1, choice="keep")
    assert (keep.blind_verdict, keep.final_verdict, keep.reconciled, keep.slip) == (
        "CONTRADICTED",
        "CONTRADICTED",
        "keep",
        False,
    )
    slip = review.reconcile(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk2, choice="judge_right")
    assert (slip.blind_verdict, slip.final_verdict, slip.reconciled, slip.slip) == (
        "SUPPORTED",
        "UNSUPPORTED",
        "judge_right",
        True,
    )
    again = review.reconcile(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk2, choice="judge_right")
    assert again == slip
    kinds = [(e["kind"], e["verdict"]) for e in store.label_history(fresh_db, pk2, "ann")]
    assert kinds == [("blind", "SUPPORTED"), ("judge_right", "UNSUPPORTED")]
    changed = review.reconcile(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk2, choice="keep")
    assert (changed.final_verdict, changed.slip) == ("SUPPORTED", False)
    review.reconcile(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk2, choice="judge_right")
    rows = review.reveal(fresh_db, cycle_id=cyc.id, answer_id="A2", reviewer="ann")
    assert [(r.disagrees, r.pending, r.reconciled) for r in rows] == [
        (True, False, "keep"),
        (True, False, "judge_right"),
    ]


def test_a_write_based_on_a_stale_label_is_refused(fresh_db: Database, cyc: cycles.Cycle) -> None:
    """Two tabs show claim c1 unlabeled; the first writes; the second, based on what it showed,
    is refused with nothing written, and a write based on the current state goes through."""
    pk = _pk(fresh_db, "A2", "c1")
    first = review.label(
        fresh_db,
        cycle_id=cyc.id,
        reviewer="ann",
        claim_pk=pk,
        verdict="SUPPORTED",
        based_on=store.BasedOn(None),
    )
    assert first.event_id is not None
    assert review.load_card(fresh_db, "A2", "ann").claims[0].label == first  # what a card shows
    refused = r"^this claim was labeled in another tab at \d\d:\d\d UTC — showing it now$"
    for kind, verdict in (("blind", "CONTRADICTED"), ("skip", None), ("unclear", None)):
        with pytest.raises(StaleLabelError, match=refused):
            review.label(
                fresh_db,
                cycle_id=cyc.id,
                reviewer="ann",
                claim_pk=pk,
                kind=kind,
                verdict=verdict,
                note="from the stale tab",
                based_on=store.BasedOn(None),
            )
    assert store.label_state(fresh_db, pk, "ann") == first
    assert [e["verdict"] for e in store.label_history(fresh_db, pk, "ann")] == ["SUPPORTED"]
    # another reviewer's label, and a lead's adjudication under ann's own name, are not ann's label
    review.label(
        fresh_db,
        cycle_id=cyc.id,
        reviewer="bob",
        claim_pk=pk,
        verdict="UNSUPPORTED",
        based_on=store.BasedOn(None),
    )
    store.adjudicate(fresh_db, claim=pk, adjudicator="ann", verdict="UNSUPPORTED")
    second = review.label(
        fresh_db,
        cycle_id=cyc.id,
        reviewer="ann",
        claim_pk=pk,
        verdict="CONTRADICTED",
        based_on=store.BasedOn(first.event_id),
    )
    assert second.blind_verdict == "CONTRADICTED" and second.event_id != first.event_id
    with pytest.raises(StaleLabelError):  # the first tab's state is stale now
        review.label(
            fresh_db,
            cycle_id=cyc.id,
            reviewer="ann",
            claim_pk=pk,
            verdict="SUPPORTED",
            based_on=store.BasedOn(first.event_id),
        )


def test_a_reconcile_based_on_a_stale_label_is_refused(fresh_db: Database, cyc: cycles.Cycle) -> None:
    _label_all(fresh_db, cyc.id, "ann", "A2", ["CONTRADICTED", "UNSUPPORTED"])
    pk = _pk(fresh_db, "A2", "c1")
    shown = store.label_state(fresh_db, pk, "ann")
    assert shown is not None
    keep = review.reconcile(
        fresh_db,
        cycle_id=cyc.id,
        reviewer="ann",
        claim_pk=pk,
        choice="keep",
        based_on=store.BasedOn(shown.event_id),
    )
    # a repeat of the choice now in force records nothing, stale or not (a double key press)
    assert (
        review.reconcile(
            fresh_db,
            cycle_id=cyc.id,
            reviewer="ann",
            claim_pk=pk,
            choice="keep",
            based_on=store.BasedOn(shown.event_id),
        )
        == keep
    )
    with pytest.raises(StaleLabelError):
        review.reconcile(
            fresh_db,
            cycle_id=cyc.id,
            reviewer="ann",
            claim_pk=pk,
            choice="judge_right",
            based_on=store.BasedOn(shown.event_id),
        )
    assert store.label_state(fresh_db, pk, "ann") == keep


def test_a_cycle_requiring_evidence_commits_once_supported_claims_name_it(
    fresh_db: Database, tmp_path: Path
) -> None:
    _load(fresh_db, tmp_path)
    cyc = cycles.create_cycle(
        fresh_db,
        name="sourced",
        judge_run=RUN,
        size=2,
        seed=3,
        strategy="random",
        reviewers=[],
        overlap=0.0,
        force=True,
        created_by="t",
        include_labeled=True,
        require_evidence=True,
    )
    assert cyc.require_evidence and review.cycle(fresh_db, cyc.id).require_evidence
    pk1, pk2, pk3 = (_pk(fresh_db, "A1", c) for c in ("c1", "c2", "c3"))
    for pk, verdict in ((pk1, "SUPPORTED"), (pk2, "SUPPORTED"), (pk3, "CONTRADICTED")):
        review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, verdict=verdict)
    card = review.load_card(fresh_db, "A1", "ann")
    assert review.missing_evidence(card) == [1, 2]  # a CONTRADICTED verdict needs none
    with pytest.raises(ConflictError, match=r"evidence of every SUPPORTED verdict: claims 1, 2 have none"):
        review.commit(fresh_db, cycle_id=cyc.id, reviewer="ann", answer_id="A1")
    assert review.evidence_gaps(fresh_db, cyc.id) == {"ann": 2}
    review.label(
        fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk1, verdict="SUPPORTED", evidence=["S1"]
    )
    with pytest.raises(ConflictError, match=r"claim 2 has none"):
        review.commit(fresh_db, cycle_id=cyc.id, reviewer="ann", answer_id="A1")
    review.label(
        fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk2, verdict="SUPPORTED", evidence=["S1"]
    )
    review.commit(fresh_db, cycle_id=cyc.id, reviewer="ann", answer_id="A1")
    assert review.load_card(fresh_db, "A1", "ann").revealed
    assert review.evidence_gaps(fresh_db, cyc.id) == {}
    # A cycle that does not require it commits SUPPORTED verdicts without evidence.
    plain = next(c for c in cycles.list_cycles(fresh_db) if c.name == "c")
    assert not plain.require_evidence
    _label_all(fresh_db, plain.id, "bob", "A2", ["SUPPORTED", "SUPPORTED"])
    assert review.evidence_gaps(fresh_db, plain.id) == {"bob": 2}


def test_reconcile_refuses_an_agreement(fresh_db: Database, cyc: cycles.Cycle) -> None:
    _label_all(fresh_db, cyc.id, "ann", "A2", ["SUPPORTED", "UNSUPPORTED"])
    with pytest.raises(ConflictError, match="agree"):
        review.reconcile(
            fresh_db,
            cycle_id=cyc.id,
            reviewer="ann",
            claim_pk=_pk(fresh_db, "A2", "c1"),
            choice="judge_right",
        )
    with pytest.raises(InputError, match="choice must be one of"):
        review.reconcile(
            fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=_pk(fresh_db, "A2", "c1"), choice="maybe"
        )


# ---------------------------------------------------------------- resume and progress


def test_resume_walks_the_queue(fresh_db: Database, cyc: cycles.Cycle) -> None:
    order = review.queue(fresh_db, cyc.id, "ann")
    assert sorted(order) == ["A1", "A2"]
    first, second = order
    assert review.resume(fresh_db, cyc.id, "ann") == review.Position(first, 0)
    card = review.load_card(fresh_db, first, "ann")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=card.claims[0].pk, verdict="SUPPORTED")
    assert review.resume(fresh_db, cyc.id, "ann") == review.Position(first, 1)
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=card.claims[1].pk, kind="skip")
    # Fresh claims first (the rest of this answer, then the next answer), skipped ones after.
    expected = review.Position(first, 2) if len(card.claims) > 2 else review.Position(second, 0)
    assert review.resume(fresh_db, cyc.id, "ann") == expected
    for c in card.claims[2:]:
        review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=c.pk, verdict="SUPPORTED")
    assert review.resume(fresh_db, cyc.id, "ann") == review.Position(second, 0)
    n_second = len(review.load_card(fresh_db, second, "ann").claims)
    _label_all(fresh_db, cyc.id, "ann", second, ["SUPPORTED"] * n_second)
    # Every claim seen: the revealed answer with a pending disagreement (the judge said
    # CONTRADICTED on A1 c3, UNSUPPORTED on A2 c2) comes before the skipped claim.
    assert review.resume(fresh_db, cyc.id, "ann") == review.Position(second, None)
    bad = next(
        r for r in review.reveal(fresh_db, cycle_id=cyc.id, answer_id=second, reviewer="ann") if r.pending
    )
    review.reconcile(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=bad.claim.pk, choice="keep")
    assert review.resume(fresh_db, cyc.id, "ann") == review.Position(first, 1)
    prog = review.progress(fresh_db, cyc.id, "ann")
    assert (prog.claims_labeled, prog.claims_total, prog.answers_done, prog.answers_total) == (4, 5, 1, 2)


def test_resume_ends_when_all_is_labeled_and_reconciled(fresh_db: Database, cyc: cycles.Cycle) -> None:
    _label_all(fresh_db, cyc.id, "ann", "A1", ["SUPPORTED", "SUPPORTED", "CONTRADICTED"])
    _label_all(fresh_db, cyc.id, "ann", "A2", ["SUPPORTED", "SUPPORTED"])
    # A2 c2: the judge said UNSUPPORTED; pending until reconciled.
    assert review.resume(fresh_db, cyc.id, "ann") == review.Position("A2", None)
    assert review.resume(fresh_db, cyc.id, "ann", after="A2") == review.Position("A2", None)
    review.reconcile(
        fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=_pk(fresh_db, "A2", "c2"), choice="keep"
    )
    assert review.resume(fresh_db, cyc.id, "ann") is None
    prog = review.progress(fresh_db, cyc.id, "ann")
    assert (prog.claims_labeled, prog.claims_total, prog.answers_done, prog.fraction) == (5, 5, 2, 1.0)
    assert review.resume(fresh_db, cyc.id, "bob") is not None


def test_next_open_prefers_fresh_claims(fresh_db: Database, cyc: cycles.Cycle) -> None:
    card = review.load_card(fresh_db, "A1", "ann")
    assert card.next_open() == 0
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=card.claims[0].pk, kind="skip")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=card.claims[2].pk, verdict="SUPPORTED")
    card = review.load_card(fresh_db, "A1", "ann")
    assert card.next_open(0) == 1
    assert card.next_open(1, fresh_only=True) == 1
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=card.claims[1].pk, verdict="SUPPORTED")
    card = review.load_card(fresh_db, "A1", "ann")
    assert card.next_open(1, fresh_only=True) is None
    assert card.next_open(1) == 0


# ---------------------------------------------------------------- unclear and skipped claims


def test_unclear_settles_a_claim_and_reveals_the_answer(fresh_db: Database, cyc: cycles.Cycle) -> None:
    pk1, pk2 = _pk(fresh_db, "A2", "c1"), _pk(fresh_db, "A2", "c2")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk1, verdict="CONTRADICTED")
    review.label(
        fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk2, kind="unclear", note="needs the price list"
    )
    card = review.load_card(fresh_db, "A2", "ann")
    assert card.complete and [c.settled for c in card.claims] == [True, True]
    review.commit(fresh_db, cycle_id=cyc.id, reviewer="ann", answer_id="A2")
    rows = review.reveal(fresh_db, cycle_id=cyc.id, answer_id="A2", reviewer="ann")
    # The unclear claim stays blind (no judge verdict, rationale or evidence) until a lead
    # settles it; nothing to reconcile.
    assert [(r.unclear, r.blind, r.judge_verdict, r.rationale, r.disagrees, r.pending) for r in rows] == [
        (False, "CONTRADICTED", "SUPPORTED", "RATIONALE-A2-c1", True, True),
        (True, None, None, None, False, False),
    ]
    with pytest.raises(ConflictError, match="unclear"):
        review.reconcile(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk2, choice="judge_right")
    # Revealed: the unclear claim is frozen for the reviewer (a lead decides it).
    with pytest.raises(ConflictError, match="revealed"):
        review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk2, verdict="UNSUPPORTED")
    store.adjudicate(fresh_db, claim=pk2, adjudicator="lead", verdict="UNSUPPORTED")
    rows = review.reveal(fresh_db, cycle_id=cyc.id, answer_id="A2", reviewer="ann")
    assert [(r.adjudicated, r.judge_verdict) for r in rows] == [
        (None, "SUPPORTED"),
        ("UNSUPPORTED", "UNSUPPORTED"),
    ]
    assert rows[1].rationale == "RATIONALE-A2-c2"  # settled by a lead: now shown


def test_a_skipped_claim_comes_back_until_it_is_settled(fresh_db: Database, cyc: cycles.Cycle) -> None:
    """QA: a claim skipped twice was stranded, and the queue said "done" with it unrevealed."""
    a1 = review.load_card(fresh_db, "A1", "ann").claims
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=a1[0].pk, kind="unclear")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=a1[1].pk, kind="skip")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=a1[2].pk, verdict="CONTRADICTED")
    _label_all(fresh_db, cyc.id, "ann", "A2", ["SUPPORTED", "UNSUPPORTED"])  # as the judge
    # Every fresh claim is done: the skipped claim comes back, however often it is skipped.
    for _ in range(3):
        assert review.resume(fresh_db, cyc.id, "ann") == review.Position("A1", 1)
        assert review.resume(fresh_db, cyc.id, "ann", after="A1") == review.Position("A1", 1)
        review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=a1[1].pk, kind="skip")
    prog = review.progress(fresh_db, cyc.id, "ann")
    assert (prog.claims_labeled, prog.claims_unclear, prog.claims_skipped, prog.claims_total) == (3, 1, 1, 5)
    assert (prog.claims_done, prog.answers_done, prog.fraction) == (4, 1, 0.8)
    assert [
        (s.answer_id, s.status)
        for s in review.answer_statuses(fresh_db, cyc.id, "ann")
        if s.answer_id == "A1"
    ] == [("A1", "skipped")]
    # A verdict settles it: the last look, then the commit reveals A1 and its disagreement.
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=a1[1].pk, verdict="UNSUPPORTED")
    assert review.resume(fresh_db, cyc.id, "ann") == review.Position("A1", None)
    assert review.progress(fresh_db, cyc.id, "ann").answers_done == 1
    review.commit(fresh_db, cycle_id=cyc.id, reviewer="ann", answer_id="A1")
    assert review.resume(fresh_db, cyc.id, "ann") == review.Position("A1", None)
    assert {s.answer_id: s.status for s in review.answer_statuses(fresh_db, cyc.id, "ann")} == {
        "A1": "revealed",
        "A2": "reconciled",
    }
    review.reconcile(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=a1[1].pk, choice="keep")
    assert review.resume(fresh_db, cyc.id, "ann") is None
    prog = review.progress(fresh_db, cyc.id, "ann")
    assert (prog.claims_labeled, prog.claims_unclear, prog.claims_skipped, prog.answers_done) == (4, 1, 0, 2)


def test_skips_in_another_cycle_do_not_settle_a_claim(fresh_db: Database, cyc: cycles.Cycle) -> None:
    pk = _pk(fresh_db, "A2", "c1")
    review.label(fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, kind="skip")
    other = cycles.create_cycle(
        fresh_db,
        name="d",
        judge_run=RUN,
        size=2,
        seed=3,
        strategy="random",
        reviewers=[],
        overlap=0.0,
        force=True,
        created_by="t",
    )
    _label_all(fresh_db, cyc.id, "ann", "A1", ["SUPPORTED", "SUPPORTED", "CONTRADICTED"])
    review.label(
        fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=_pk(fresh_db, "A2", "c2"), verdict="UNSUPPORTED"
    )
    assert review.resume(fresh_db, cyc.id, "ann") == review.Position("A2", 0)
    assert review.resume(fresh_db, other.id, "ann") == review.Position("A2", 0)


def test_duration_is_kept_with_the_label(fresh_db: Database, cyc: cycles.Cycle) -> None:
    pk = _pk(fresh_db, "A2", "c1")
    review.label(
        fresh_db, cycle_id=cyc.id, reviewer="ann", claim_pk=pk, verdict="SUPPORTED", duration_ms=4200
    )
    review.label(
        fresh_db, cycle_id=cyc.id, reviewer="bob", claim_pk=pk, verdict="SUPPORTED", duration_ms=-5
    )  # a clock step back is not a negative time
    events = store.label_history(fresh_db, pk)
    assert [(e["reviewer"], e["duration_ms"]) for e in events] == [("ann", 4200), ("bob", 0)]
    run = store.find_judge_run(fresh_db, RUN)
    from calibration.store import review as db_review

    assert db_review.label_durations(fresh_db, run.id, cyc.id) == {"ann": [4200], "bob": [0]}


# ---------------------------------------------------------------- the cycle picker


def test_cycle_choices_default_to_the_first_with_work(
    fresh_db: Database, tmp_path: Path, cyc: cycles.Cycle
) -> None:
    second = cycles.create_cycle(
        fresh_db,
        name="d",
        judge_run=RUN,
        size=1,
        seed=1,
        strategy="random",
        reviewers=[],
        overlap=0.0,
        force=True,
        created_by="t",
    )
    only = review.queue(fresh_db, second.id, "ann")[0]
    rest = [a for a in ("A1", "A2") if a != only]
    choices = review.cycle_choices(fresh_db, "ann")
    assert [(c.cycle.name, c.has_work) for c in choices] == [("c", True), ("d", True)]
    assert review.default_cycle(choices).cycle.name == "c"
    # ann labels both answers as the judge did (nothing to reconcile): d's one answer is
    # among them, so neither cycle has work left for her.
    for answer in (only, *rest):
        verdicts = [c["verdict"] for c in next(a for a in ANSWERS if a["id"] == answer)["claims"]]
        _label_all(fresh_db, cyc.id, "ann", answer, verdicts)
    choices = review.cycle_choices(fresh_db, "ann")
    assert [c.has_work for c in choices] == [False, False]
    assert review.default_cycle(choices).cycle.name == "c"
    assert review.next_cycle_with_work(choices, cyc.id) is None
    # A third cycle with a fresh answer for ann: the default and the "next" offer.
    path = tmp_path / "more.jsonl"
    path.write_text(
        json.dumps(
            {
                "id": "A9",
                "question": "q",
                "answer": "x.",
                "chunks": ["x"],
                "claims": [{"id": "c1", "claim": "x.", "verdict": "SUPPORTED"}],
                "judge_model": "judge-x",
                "judge_prompt_version": "v1",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    import_answers(fresh_db, path)
    third = cycles.create_cycle(
        fresh_db,
        name="e",
        judge_run=RUN,
        size=3,
        seed=1,
        strategy="random",
        reviewers=[],
        overlap=0.0,
        force=True,
        created_by="t",
        include_labeled=True,
    )
    choices = review.cycle_choices(fresh_db, "ann")
    assert [c.cycle.name for c in choices if c.has_work] == ["e"]
    assert review.default_cycle(choices).cycle.id == third.id
    assert review.next_cycle_with_work(choices, cyc.id).cycle.id == third.id
    assert review.next_cycle_with_work(choices, third.id) is None
    e = next(c for c in choices if c.cycle.id == third.id)
    assert (e.progress.claims_labeled, e.progress.claims_total) == (5, 6)


def _choice(cid: int, *, assigned: bool, work: bool) -> review.CycleChoice:
    ref = review.CycleRef(cid, f"c{cid}", 1, "judge@v1", "open", not assigned)
    return review.CycleChoice(ref, review.QueueProgress(0, 1, 0, 1), work)


# (assigned to the reviewer, work left) per cycle in order -> the cycle opened, and why
@pytest.mark.parametrize(
    "cycles_, expected, why",
    [
        # an open-to-all cycle first (the demo) with work: the reviewer's own cycle still wins
        (((False, True), (True, True)), 2, "assigned to you"),
        # the own cycle is done: the open-to-all one with work
        (((False, True), (True, False)), 1, "open to all; your assigned cycles are done"),
        (((False, True), (False, True)), 1, "open to all"),
        # nothing left anywhere: the own cycle, else the first
        (((False, False), (True, False)), 2, "assigned to you; all done"),
        (((False, False), (False, False)), 1, "open to all; all done"),
        # among own cycles, the first with work
        (((True, False), (True, True), (True, True)), 2, "assigned to you"),
    ],
)
def test_default_cycle_opens_the_reviewers_own_work_first(
    cycles_: tuple[tuple[bool, bool], ...], expected: int, why: str
) -> None:
    choices = [_choice(i, assigned=a, work=w) for i, (a, w) in enumerate(cycles_, start=1)]
    shown = review.default_cycle(choices)
    assert shown is not None and shown.cycle.id == expected
    assert review.why_this_cycle(choices, shown, picked=False) == why
    assert review.why_this_cycle(choices, shown, picked=True) == "your choice"
    assert review.default_cycle([]) is None


def test_default_cycle_from_the_database(fresh_db: Database, tmp_path: Path, cyc: cycles.Cycle) -> None:
    """The open-to-all cycle `c` comes first; one assigned to ann later opens for her, not for bob."""
    own = cycles.create_cycle(
        fresh_db,
        name="ann's",
        judge_run=RUN,
        size=1,
        seed=1,
        strategy="random",
        reviewers=["ann"],
        overlap=0.0,
        force=True,
        created_by="t",
        include_labeled=True,
    )
    assert [c.cycle.name for c in review.cycle_choices(fresh_db, "ann")] == ["c", "ann's"]
    assert review.default_cycle(review.cycle_choices(fresh_db, "ann")).cycle.id == own.id
    assert review.default_cycle(review.cycle_choices(fresh_db, "bob")).cycle.id == cyc.id


# ---------------------------------------------------------------- reviewer names


def test_canonical_reviewer_matches_a_known_spelling(fresh_db: Database, tmp_path: Path) -> None:
    cyc = _load(fresh_db, tmp_path, reviewers=["Bea Lead", "carl"])
    assert review.canonical_reviewer(fresh_db, "  newcomer   here ") == "newcomer here"
    assert review.canonical_reviewer(fresh_db, "   ") == ""
    # Assigned names count as known before they have any label.
    assert review.canonical_reviewer(fresh_db, "bea  lead") == "Bea Lead"
    assert review.canonical_reviewer(fresh_db, "CARL") == "carl"
    pk = _pk(fresh_db, "A1", "c1")
    store.record_label(fresh_db, claim=pk, reviewer="Anna Reviewer", kind="blind", verdict="SUPPORTED")
    assert review.canonical_reviewer(fresh_db, "anna reviewer") == "Anna Reviewer"
    assert review.canonical_reviewer(fresh_db, "ANNA\tREVIEWER") == "Anna Reviewer"
    assert review.canonical_reviewer(fresh_db, "Anna Reviewers") == "Anna Reviewers"
    # Two spellings from before the rule: an exact match wins, else the one with more labels.
    for claim in ("c2", "c3"):
        store.record_label(
            fresh_db,
            claim=_pk(fresh_db, "A1", claim),
            reviewer="anna reviewer",
            kind="blind",
            verdict="SUPPORTED",
        )
    assert review.canonical_reviewer(fresh_db, "anna reviewer") == "anna reviewer"
    assert review.canonical_reviewer(fresh_db, "Anna Reviewer") == "Anna Reviewer"
    assert review.canonical_reviewer(fresh_db, "ANNA REVIEWER") == "anna reviewer"
    assert cyc.id


# ---------------------------------------------------------------- highlighting


def test_claim_spans_take_repeats_in_order() -> None:
    answer = "Yes. It is. Yes."
    spans = review.claim_spans(answer, ["Yes.", "It is.", "Yes.", "Missing."])
    assert spans == [(0, 4), (5, 11), (12, 16), None]
    assert review.claim_spans(answer, ["It is.", "Yes."]) == [(5, 11), (12, 16)]


# ---------------------------------------------------------------- the page's rules, without a page


def _state(pk: int, status: str, blind: str | None = None, reconciled: str | None = None) -> store.LabelState:
    final = blind
    return store.LabelState(pk, "ann", status, blind, final, reconciled, False, [], None)


def card_of(*statuses: str) -> review.Card:
    """A card whose claims (pks 1, 2, ...) have these states: todo, labeled, skipped or unclear."""
    claims = tuple(
        review.Claim(
            i,
            f"c{i}",
            i,
            f"claim {i}",
            None if s == "todo" else _state(i, s, "SUPPORTED" if s == "labeled" else None),
        )
        for i, s in enumerate(statuses, start=1)
    )
    return review.Card("A", "q", "a", (), claims)


@pytest.mark.parametrize(
    "statuses, revealed, wanted, expected, view",
    [
        (("labeled", "labeled"), True, 0, None, "reveal"),  # committed: the reveal, whatever is asked
        (("labeled", "unclear"), True, None, None, "reveal"),
        (("labeled", "labeled"), False, None, None, "last look"),  # settled, not committed
        (("labeled", "unclear"), False, 1, 1, "claim"),  # the last look: a claim to change
        (("labeled", "todo"), False, 0, 0, "claim"),  # the claim asked for, even a labeled one
        (("labeled", "todo", "skipped"), False, 5, 1, "claim"),  # out of range: the next to settle
        (("labeled", "skipped"), False, None, 1, "claim"),  # a skipped claim is still open
    ],
)
def test_shown_claim_reveals_only_after_the_commit(
    statuses: tuple[str, ...], revealed: bool, wanted: int | None, expected: int | None, view: str
) -> None:
    card = replace(card_of(*statuses), revealed=revealed)
    assert review.shown_claim(card, wanted) == expected
    assert review.card_view(card, expected) == view


@pytest.mark.parametrize(
    "rows, expected",
    [
        # (answer, index, status, disagrees, revealed) per claim
        ([("A", 0, "todo", False, False), ("A", 1, "skipped", False, False)], "to do"),
        ([("A", 0, "labeled", False, False), ("A", 1, "skipped", False, False)], "skipped"),
        ([("A", 0, "labeled", False, False), ("A", 1, "unclear", False, False)], "to do"),  # commit
        ([("A", 0, "labeled", True, True), ("A", 1, "labeled", False, True)], "revealed"),
        ([("A", 0, "labeled", False, True), ("A", 1, "unclear", False, True)], "reconciled"),
    ],
)
def test_answer_statuses(rows: list[tuple[str, int, str, bool, bool]], expected: str) -> None:
    queue_rows = [QueueRow(a, i, st, dis, 0, rev) for a, i, st, dis, rev in rows]
    assert review.answer_statuses_of(queue_rows, ["A"]) == [review.AnswerStatus("A", 1, expected, 2)]


def test_why_not_next_names_the_pending_claim() -> None:
    rows = revealed((S, S, None), (S, C, None))
    view = review.reveal_view(rows, None)
    assert review.why_not_next(view, {1: 1, 2: 2}) == (
        "Claim 2 still needs your decision: K keeps your verdict, J takes the judge's. "
        "Then N goes to the next answer."
    )
    assert review.why_not_next(review.reveal_view(revealed((S, C, "keep")), None), {1: 1}) is None


def test_verdict_definitions_are_the_judge_prompts() -> None:
    template = (store.PROJECT_ROOT / "calibration" / "prompts" / "grounding-v1.txt").read_text()
    assert review.verdict_definitions(template) == {
        "SUPPORTED": "Directly supported by the text of the chunks",
        "CONTRADICTED": "Contradicts the chunks",
        "UNSUPPORTED": "The chunks contain no information to check this claim",
    }
    assert review.verdict_definitions("no list here") == {}


@pytest.mark.parametrize(
    "markdown, limit, expected",
    [
        ("**Be strict.** Dates must match.\n\nMore detail here.", 280, "**Be strict.** Dates must match."),
        ("\n\n  first line\n  second line\n\nnext", 280, "first line second line"),
        ("one two three four", 9, "one two …"),
        ("", 280, ""),
    ],
)
def test_guideline_summary(markdown: str, limit: int, expected: str) -> None:
    assert review.guideline_summary(markdown, limit) == expected


@pytest.mark.parametrize(
    "text, limit, expected",
    [
        ("When does\n  delivery start?", 90, "When does delivery start?"),
        ("one two three four", 9, "one two …"),
        ("", 90, ""),
    ],
)
def test_cut_words(text: str, limit: int, expected: str) -> None:
    assert review.cut_words(text, limit) == expected


def test_answer_list_gives_each_answers_question(fresh_db: Database, cyc: cycles.Cycle) -> None:
    asked = {a["id"]: a["question"] for a in ANSWERS}
    rows = review.answer_statuses(fresh_db, cyc.id, "ann")
    assert [(r.answer_id, r.question) for r in rows] == [
        (a, asked[a]) for a in review.queue(fresh_db, cyc.id, "ann")
    ]


def revealed(*rows: tuple[str | None, str | None, str | None]) -> list[review.Revealed]:
    """Reveal rows (pks 1, 2, ...) from (blind verdict or None for unclear, judge, reconciled)."""
    out = []
    for i, (blind, judge, reconciled) in enumerate(rows, start=1):
        state = _state(i, "labeled" if blind else "unclear", blind, reconciled)
        out.append(review.Revealed(review.Claim(i, f"c{i}", i, f"claim {i}", state), judge, None, ()))
    return out


S, C, U = "SUPPORTED", "CONTRADICTED", "UNSUPPORTED"


def test_selection_walks_the_pending_disagreements() -> None:
    # 1 agrees, 2 and 4 disagree (pending), 3 disagrees but is reconciled, 5 is unclear.
    rows = revealed((S, S, None), (S, C, None), (U, S, "keep"), (C, U, None), (None, S, None))
    assert review.selected_disagreement(rows, None) == 2  # the first pending one
    assert review.selected_disagreement(rows, 3) == 3  # a disagreement asked for stays selected
    assert review.selected_disagreement(rows, 1) == 2  # an agreement cannot be selected
    assert review.selected_disagreement(rows, 5) == 2  # nor an unclear claim
    # After a reconcile: the next pending one after it, wrapping; none left: the same claim.
    assert review.selection_after_reconcile(rows, 2) == 4
    assert review.selection_after_reconcile(rows, 4) == 2
    settled = revealed((S, C, "keep"), (U, S, "judge_right"))
    assert review.selection_after_reconcile(settled, 1) == 1
    assert review.selected_disagreement(settled, None) == 1  # none pending: the first disagreement
    assert review.selected_disagreement(revealed((S, S, None), (None, C, None)), None) is None


def test_reveal_view_counts_and_selection() -> None:
    rows = revealed((S, S, None), (S, C, None), (U, S, "keep"), (C, U, None), (None, S, None))
    view = review.reveal_view(rows, 4)
    assert (view.selected, view.disagreements) == (4, (2, 3, 4))
    assert (view.agree, view.compared, view.unclear, view.pending) == (1, 4, 1, 2)
    assert not view.can_move_on
    one = review.reveal_view(revealed((S, C, "keep"), (S, S, None)), None)
    assert (one.selected, one.disagreements, one.pending) == (1, (1,), 0)
    assert one.can_move_on
    none = review.reveal_view(revealed((S, S, None), (None, None, None)), None)
    assert (none.selected, none.disagreements, none.compared, none.unclear) == (None, (), 1, 1)


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        (
            "Какая столица Франции?",
            "The capital of France is Paris.",
            ["The answer is written in Latin script"],
        ),
        ("What is the capital of France?", "The capital is Paris (巴黎).", ["CJK character"]),
        ("What is the capital of France?", "The capital of France is Paris.", []),
    ],
)
def test_answer_facts_state_script_checks_as_facts(question: str, answer: str, expected: list[str]) -> None:
    card = review.Card(answer_id="a", question=question, answer=answer, chunks=(), claims=())
    facts = review.answer_facts(card)
    assert len(facts) == len(expected)
    for fact, start in zip(facts, expected, strict=True):
        assert start in fact
