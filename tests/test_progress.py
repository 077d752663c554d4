"""Progress is counted one way: the lead's Cycles table and the reviewer's queue agree.

The failure reproduced here: a reviewer labeled 7 of the demo's 9 claims in an earlier cycle (or
brought them in with import-labels) and the last 2 in the current one; the lead's table said 2/9
while the reviewer's queue said 9/9. Both now say 9/9, with the 7 reused labels counted apart.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibration import cli, cycles, review, store
from calibration.importing import import_answers, import_labels
from calibration.store import Database
from calibration.store import review as db_review

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "demo_rag_v1.jsonl"
RUN = "demo-judge@grounding-v1"
# The demo's answers and their claims; the judge said SUPPORTED on all 9.
DEMO_CLAIMS = {"Q1": ["c1", "c2"], "Q2": ["c1", "c2"], "Q3": ["c1", "c2"], "Q4": ["c1", "c2"], "Q5": ["c1"]}
EARLIER = ("Q1", "Q2", "Q3", "Q5")  # 7 claims labeled before the current cycle


def new_cycle(db: Database, name: str, assigned: bool, **kw: object) -> cycles.Cycle:
    return cycles.create_cycle(
        db,
        name=name,
        judge_run=RUN,
        size=5,
        seed=1,
        force=True,
        reviewers=["ann"] if assigned else [],
        overlap=0.0,
        **kw,
    )  # type: ignore[arg-type]


def settle(db: Database, cycle_id: int, reviewer: str, answer: str, verdict: str = "SUPPORTED") -> None:
    """Label every claim of the answer on the review page, then commit it (the last look)."""
    for claim in review.load_card(db, answer, reviewer).claims:
        review.label(db, cycle_id=cycle_id, reviewer=reviewer, claim_pk=claim.pk, verdict=verdict)
    review.commit(db, cycle_id=cycle_id, reviewer=reviewer, answer_id=answer)


def labels_csv(path: Path, rows: list[tuple[str, str, str]], reviewer: str = "ann") -> Path:
    path.write_text(
        "answer_id,claim_id,verdict,reviewer\n" + "".join(f"{a},{c},{v},{reviewer}\n" for a, c, v in rows),
        encoding="utf-8",
    )
    return path


def lead_side(db: Database, cycle_id: int, reviewer: str) -> tuple[int, int, int, int, int, int]:
    mine = next(r for r in cycles.progress(db, cycle_id).reviewers if r.reviewer == reviewer)
    return mine.labeled, mine.total, mine.reused, mine.unclear, mine.answers_done, mine.answers_total


def reviewer_side(db: Database, cycle_id: int, reviewer: str) -> tuple[int, int, int, int, int, int]:
    q = review.progress(db, cycle_id, reviewer)
    picked = next(c.progress for c in review.cycle_choices(db, reviewer) if c.cycle.id == cycle_id)
    assert picked == q  # the picker counts as the progress bar does
    return (q.claims_done, q.claims_total, q.claims_reused, q.claims_unclear, q.answers_done, q.answers_total)


@pytest.fixture
def demo_db(fresh_db: Database) -> Database:
    """The DEMO-RAG-v1 worked example (5 answers, 9 claims), judged, not yet labeled."""
    import_answers(fresh_db, DEMO)
    return fresh_db


# ---------------------------------------------------------------- the reported case


@pytest.mark.parametrize("assigned", [False, True], ids=["open to all", "assigned"])
def test_labels_from_an_earlier_cycle_count_on_both_sides(
    demo_db: Database, db_url: str | Path, assigned: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    week1 = new_cycle(demo_db, "week 1", assigned)
    for answer in EARLIER:
        settle(demo_db, week1.id, "ann", answer)
    week2 = new_cycle(demo_db, "week 2", assigned, include_labeled=True)
    assert sorted(week2.answers) == sorted(DEMO_CLAIMS)
    settle(demo_db, week2.id, "ann", "Q4")

    assert (
        lead_side(demo_db, week2.id, "ann") == reviewer_side(demo_db, week2.id, "ann") == (9, 9, 7, 0, 5, 5)
    )
    prog = cycles.progress(demo_db, week2.id)
    assert (prog.labeled, prog.total, prog.reused, prog.labeled_elsewhere) == (9, 9, 7, 0)
    assert prog.headline() == "9/9 claims finished (7 reused from other cycles or imports)"
    assert review.progress(demo_db, week2.id, "ann").reused_note() == "7 reused from other cycles or imports"
    assert review.resume(demo_db, week2.id, "ann") is None and prog.outstanding() is None
    # The earlier cycle, still open, counts its own 7 as new and week 2's 2 as reused.
    assert (
        lead_side(demo_db, week1.id, "ann") == reviewer_side(demo_db, week1.id, "ann") == (9, 9, 2, 0, 5, 5)
    )

    rc = cli.main(["--db", str(db_url), "cycle", "show", "week 2"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "progress: 9/9 claims finished (7 reused from other cycles or imports); ann 9/9 (7 reused)" in out
    # Nothing outstanding: the cycle closes without --force, and the snapshot keeps the count.
    snap = cycles.close_cycle(demo_db, "week 2").snapshot
    assert snap is not None and (snap["progress"]["labeled"], snap["progress"]["reused"]) == (9, 7)
    fig = cycles.frozen_figures(snap)
    assert fig is not None and (fig.labeled, fig.total, fig.reused) == (9, 9, 7)


def test_another_reviewers_labels_are_not_this_cycles_work(demo_db: Database) -> None:
    week1 = new_cycle(demo_db, "week 1", assigned=False)
    for answer in EARLIER:
        settle(demo_db, week1.id, "zoe", answer)
    week2 = new_cycle(demo_db, "week 2", assigned=True, include_labeled=True)
    settle(demo_db, week2.id, "ann", "Q4")
    assert (
        lead_side(demo_db, week2.id, "ann") == reviewer_side(demo_db, week2.id, "ann") == (2, 9, 0, 0, 1, 5)
    )
    prog = cycles.progress(demo_db, week2.id)
    assert (prog.labeled, prog.reused, prog.labeled_elsewhere) == (2, 0, 7)
    assert prog.headline() == "2/9 claims finished (already labeled outside this cycle: 7)"


# ---------------------------------------------------------------- import-labels


@pytest.mark.parametrize("assigned", [False, True], ids=["open to all", "assigned"])
def test_imported_labels_count_on_both_sides_and_their_answers_are_committed(
    demo_db: Database, tmp_path: Path, assigned: bool
) -> None:
    rows = [(a, c, "SUPPORTED") for a in EARLIER for c in DEMO_CLAIMS[a]]
    import_labels(demo_db, labels_csv(tmp_path / "labels.csv", rows))
    cycle = new_cycle(demo_db, "week 1", assigned, include_labeled=True)
    # An answer the import completed needs no last look: it is committed like one settled on the
    # review page, so the queue goes straight to the answer still to label.
    assert review.resume(demo_db, cycle.id, "ann") == review.Position("Q4", 0)
    statuses = {s.answer_id: s.status for s in review.answer_statuses(demo_db, cycle.id, "ann")}
    assert statuses == {
        "Q1": "reconciled",
        "Q2": "reconciled",
        "Q3": "reconciled",
        "Q4": "to do",
        "Q5": "reconciled",
    }
    settle(demo_db, cycle.id, "ann", "Q4")
    assert (
        lead_side(demo_db, cycle.id, "ann") == reviewer_side(demo_db, cycle.id, "ann") == (9, 9, 7, 0, 5, 5)
    )
    assert cycles.progress(demo_db, cycle.id).headline() == (
        "9/9 claims finished (7 reused from other cycles or imports)"
    )
    assert review.resume(demo_db, cycle.id, "ann") is None


def test_an_imported_disagreement_is_revealed_for_reconciling(demo_db: Database, tmp_path: Path) -> None:
    import_labels(
        demo_db,
        labels_csv(tmp_path / "labels.csv", [("Q1", "c1", "SUPPORTED"), ("Q1", "c2", "CONTRADICTED")]),
    )
    cycle = new_cycle(demo_db, "week 1", assigned=True, include_labeled=True)
    assert (
        review.answer_statuses(demo_db, cycle.id, "ann")[
            review.queue(demo_db, cycle.id, "ann").index("Q1")
        ].status
        == "revealed"
    )
    pending = [
        r.claim.claim_id
        for r in review.reveal(demo_db, cycle_id=cycle.id, answer_id="Q1", reviewer="ann")
        if r.pending
    ]
    assert pending == ["c2"]
    assert (
        lead_side(demo_db, cycle.id, "ann") == reviewer_side(demo_db, cycle.id, "ann") == (2, 9, 2, 0, 1, 5)
    )


def test_a_partly_imported_answer_waits_for_the_reviewers_commit(demo_db: Database, tmp_path: Path) -> None:
    import_labels(demo_db, labels_csv(tmp_path / "labels.csv", [("Q4", "c1", "SUPPORTED")]))
    cycle = new_cycle(demo_db, "week 1", assigned=True)
    assert not db_review.answer_revealed(demo_db, "Q4", "ann")
    card = review.load_card(demo_db, "Q4", "ann")
    review.label(demo_db, cycle_id=cycle.id, reviewer="ann", claim_pk=card.claims[1].pk, verdict="SUPPORTED")
    # Settled, half from the import: the reviewer's own last look commits it, not the import.
    assert not db_review.answer_revealed(demo_db, "Q4", "ann")
    queue = review.queue(demo_db, cycle.id, "ann")
    before = queue[queue.index("Q4") - 1]
    assert review.resume(demo_db, cycle.id, "ann", after=before) == review.Position("Q4", None)
    assert (
        lead_side(demo_db, cycle.id, "ann") == reviewer_side(demo_db, cycle.id, "ann") == (2, 9, 1, 0, 0, 5)
    )
    review.commit(demo_db, cycle_id=cycle.id, reviewer="ann", answer_id="Q4")
    assert (
        lead_side(demo_db, cycle.id, "ann") == reviewer_side(demo_db, cycle.id, "ann") == (2, 9, 1, 0, 1, 5)
    )


def test_answers_imported_before_the_migration_are_committed_by_it(db_path: Path, tmp_path: Path) -> None:
    csv = labels_csv(
        tmp_path / "labels.csv",
        [("Q1", "c1", "SUPPORTED"), ("Q1", "c2", "SUPPORTED"), ("Q2", "c1", "SUPPORTED")],
    )
    with store.session(db_path) as db:
        import_answers(db, DEMO)
        import_labels(db, csv)
        with store.write(db):
            # As a database of the release before m012: the labels are in, no commit recorded.
            db.execute("DELETE FROM answer_reveals")
            db.execute(
                "DELETE FROM _sqlite_migrations WHERE name IN "
                "('m012_imported_labels_commit', 'm017_import_commit_in_python')"
            )
    with store.session(db_path) as db:
        store.migrations.apply(db)  # replays the migrations, as an upgraded release does
        assert [tuple(r) for r in db.execute("SELECT answer_id, reviewer, cycle_id FROM answer_reveals")] == [
            ("Q1", "ann", None)
        ]


def test_the_import_commit_rule_is_no_trigger(fresh_db: Database) -> None:
    # m017: the rule lives in the store's write path (calibration.store.reveals), on every backend.
    sql = (
        "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        if fresh_db.dialect == "sqlite"
        else "SELECT tgname FROM pg_trigger"
    )
    names = {r[0] for r in fresh_db.execute(sql)}
    assert names.isdisjoint({"human_labels_import_commit_insert", "human_labels_import_commit_update"})


# ---------------------------------------------------------------- unclear claims


def test_an_unclear_claim_is_done_for_the_reviewer_and_work_for_a_lead(demo_db: Database) -> None:
    cycle = new_cycle(demo_db, "week 1", assigned=True)
    for answer in ("Q1", "Q2", "Q3", "Q4"):
        settle(demo_db, cycle.id, "ann", answer)
    pk = store.claim_pk(demo_db, "Q5", "c1")
    review.label(demo_db, cycle_id=cycle.id, reviewer="ann", claim_pk=pk, kind="unclear")
    review.commit(demo_db, cycle_id=cycle.id, reviewer="ann", answer_id="Q5")
    assert (
        lead_side(demo_db, cycle.id, "ann") == reviewer_side(demo_db, cycle.id, "ann") == (9, 9, 0, 1, 5, 5)
    )
    prog = cycles.progress(demo_db, cycle.id)
    assert (prog.labeled, prog.unclear) == (9, 1)
    assert prog.outstanding() == "1 claim marked unclear waits for a lead's decision"
    with pytest.raises(cycles.WorkOutstandingError):
        cycles.close_cycle(demo_db, "week 1")
    store.adjudicate(demo_db, claim=pk, adjudicator="lead", verdict="UNSUPPORTED")
    assert cycles.progress(demo_db, cycle.id).outstanding() is None


# ---------------------------------------------------------------- the rule itself, by table


@pytest.mark.parametrize(
    ("status", "here", "done", "reused"),
    [
        (None, False, False, False),
        ("skipped", True, False, False),
        ("labeled", True, True, False),
        ("labeled", False, True, True),
        ("unclear", True, True, False),
        ("unclear", False, True, True),
    ],
)
def test_claim_done_and_reused(status: str | None, here: bool, done: bool, reused: bool) -> None:
    assert cycles.claim_done(status) is done
    assert cycles.label_reused(status, here) is reused


def test_count_work_counts_answers_committed_with_every_claim_done() -> None:
    claims = [
        ("a", "labeled", True),
        ("a", "unclear", False),
        ("b", "labeled", False),
        ("b", "skipped", True),
        ("c", "labeled", False),
    ]
    # "a" committed and done; "b" has a skipped claim; "c" done but not committed; "d" has no claims.
    assert cycles.count_work(claims, ["a", "b", "c", "d"], {"a", "b"}) == cycles.WorkCount(
        done=4, total=5, unclear=1, reused=3, answers_done=2, answers_total=4
    )


# ---------------------------------------------------------------- both sides agree, whatever happened

# Per claim and reviewer, what happened before progress is read: nothing, a skip or an unclear
# mark in the current cycle, a verdict in the earlier cycle or the current one, an import.
ACTIONS = ("none", "skip", "unclear", "earlier", "here", "import")
CLAIMS = [(a, c) for a, cs in DEMO_CLAIMS.items() for c in cs]


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    assigned=st.booleans(),
    plan=st.dictionaries(
        st.sampled_from(["ann", "bob"]),
        st.tuples(
            st.lists(st.sampled_from(ACTIONS), min_size=9, max_size=9),
            st.sets(st.sampled_from(sorted(DEMO_CLAIMS))),
        ),
        min_size=1,
    ),
)
def test_the_lead_and_every_reviewer_count_alike(
    tmp_path_factory: pytest.TempPathFactory, assigned: bool, plan: dict[str, tuple[list[str], set[str]]]
) -> None:
    path = tmp_path_factory.mktemp("agree") / "c.db"
    with store.session(path) as db:
        import_answers(db, DEMO)
        earlier = new_cycle(db, "earlier", assigned=False)
        team = sorted(plan)
        current = cycles.create_cycle(
            db,
            name="current",
            judge_run=RUN,
            size=5,
            seed=1,
            force=True,
            reviewers=team if assigned else [],
            overlap=0.0,
            include_labeled=True,
        )
        for who, (actions, commits) in plan.items():
            for (answer, claim), action in zip(CLAIMS, actions, strict=True):
                pk = store.claim_pk(db, answer, claim)
                kind, cycle_id = {
                    "skip": ("skip", current.id),
                    "unclear": ("unclear", current.id),
                    "earlier": ("blind", earlier.id),
                    "here": ("blind", current.id),
                    "import": ("import", None),
                }.get(action, (None, None))
                if kind is not None:
                    store.record_label(
                        db,
                        claim=pk,
                        reviewer=who,
                        kind=kind,
                        cycle_id=cycle_id,
                        verdict=None if kind in ("skip", "unclear") else "SUPPORTED",
                    )
            for answer in commits:  # the reviewer's commit, where every claim is settled
                if db_review.answer_settled(db, answer, who):
                    db_review.record_reveal(db, answer, who, current.id)
        prog = cycles.progress(db, current.id)
        queues = {who: cycles.queue(db, current.id, who) for who in team}

        # Expected, from the plan alone.
        expected: dict[str, tuple[int, int, int, int, int, int]] = {}
        for who, (actions, commits) in plan.items():
            mine = [(a, act) for (a, _), act in zip(CLAIMS, actions, strict=True) if a in queues[who]]
            by_answer: dict[str, list[str]] = {}
            for a, act in mine:
                by_answer.setdefault(a, []).append(act)
            settled = {
                a
                for a, acts in by_answer.items()
                if all(x in ("unclear", "earlier", "here", "import") for x in acts)
            }
            committed = {a for a in settled if a in commits or all(x == "import" for x in by_answer[a])}
            expected[who] = (
                sum(act in ("unclear", "earlier", "here", "import") for _, act in mine),
                len(mine),
                sum(act in ("earlier", "import") for _, act in mine),
                sum(act == "unclear" for _, act in mine),
                len(committed),
                len(queues[who]),
            )
        took_part = {
            who
            for who, (actions, commits) in plan.items()
            if any(x in ("skip", "unclear", "here") for x in actions)
            or any(db_review.answer_settled(db, a, who) for a in commits)
        }
        listed = {r.reviewer for r in prog.reviewers}
        assert listed == (set(team) if assigned else took_part)
        for who in team:
            got = reviewer_side(db, current.id, who)
            assert got == expected[who]
            if who in listed:
                assert lead_side(db, current.id, who) == got
        if assigned:  # no overlap: each claim has one reviewer, so the cycle is their sum
            assert (prog.labeled, prog.reused, prog.unclear) == tuple(
                sum(expected[w][i] for w in team) for i in (0, 2, 3)
            )
        assert prog.total == 9


def test_settled_in_reads_the_event_that_settled_the_label(demo_db: Database) -> None:
    """A reconcile in a later cycle does not make a reused verdict new work."""
    week1 = new_cycle(demo_db, "week 1", assigned=True)
    settle(demo_db, week1.id, "ann", "Q1", verdict="CONTRADICTED")
    week2 = new_cycle(demo_db, "week 2", assigned=True, include_labeled=True)
    review.reconcile(
        demo_db,
        cycle_id=week2.id,
        reviewer="ann",
        claim_pk=store.claim_pk(demo_db, "Q1", "c1"),
        choice="keep",
    )
    assert (
        lead_side(demo_db, week2.id, "ann") == reviewer_side(demo_db, week2.id, "ann") == (2, 9, 2, 0, 1, 5)
    )
