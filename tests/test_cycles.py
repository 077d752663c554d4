from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from calibration import assessment, cli, cycles, dashboard, fmt, store
from calibration.cli.common import FLAGS
from calibration.errors import ConflictError, InputError, NotFoundError, Option
from calibration.store import Database
from tests.helpers import assert_no_traceback

ROOT = Path(__file__).resolve().parents[1]
WICE = ROOT / "data" / "wice"
RUN = "judge@v1"


# ---------------------------------------------------------------- small data made here


def add_answer(
    db: Database, run_id: int, answer_id: str, verdicts: list[str], category: str | None = None
) -> list[int]:
    """One judged answer with one claim per verdict; returns the claim keys."""
    db.execute(
        "INSERT INTO answers (id, question, answer, category, content_hash, imported_at) "
        "VALUES (:id, 'q', 'a', :category, :content_hash, :imported_at)",
        {"id": answer_id, "category": category, "content_hash": answer_id, "imported_at": store.now()},
    )
    pks = []
    for i, verdict in enumerate(verdicts):
        (pk,) = db.execute(
            "INSERT INTO claims (answer_id, claim_id, position, text) "
            "VALUES (:answer_id, :claim_id, :position, :text) RETURNING id",
            {"answer_id": answer_id, "claim_id": f"c{i + 1}", "position": i, "text": f"claim {i + 1}"},
        ).fetchone()
        db.execute(
            "INSERT INTO judge_verdicts (run_id, claim_pk, verdict) VALUES (:run_id, :claim_pk, :verdict)",
            {"run_id": run_id, "claim_pk": pk, "verdict": verdict},
        )
        pks.append(pk)
    return pks


def build_run(db: Database) -> dict[str, list[int]]:
    """Run judge@v1 over 40 two-claim answers a00..a39 in categories cat-a (20), cat-b (12),
    cat-c (8); a00..a09 hold one UNSUPPORTED verdict (failing), the rest are all SUPPORTED."""
    with store.write(db):
        run_id = store.run_id(db, "judge", "v1")
        assert run_id is not None  # made when missing
        claims = {}
        for i in range(40):
            category = "cat-a" if i < 20 else "cat-b" if i < 32 else "cat-c"
            verdicts = ["SUPPORTED", "UNSUPPORTED" if i < 10 else "SUPPORTED"]
            claims[f"a{i:02d}"] = add_answer(db, run_id, f"a{i:02d}", verdicts, category)
    return claims


@pytest.fixture
def run_db(fresh_db: Database) -> Database:
    """A database holding run judge@v1 over 40 answers (see build_run)."""
    build_run(fresh_db)
    return fresh_db


@pytest.fixture
def claims_of(run_db: Database) -> dict[str, list[int]]:
    """Claim keys per answer id of run_db."""
    out: dict[str, list[int]] = {}
    for aid, pk in run_db.execute("SELECT answer_id, id FROM claims ORDER BY answer_id, position"):
        out.setdefault(aid, []).append(pk)
    return out


def create(db: Database, name: str = "c1", **kw: object) -> cycles.Cycle:
    kw = {"judge_run": RUN, "seed": 1, **kw}
    return cycles.create_cycle(db, name=name, **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------- sampling into a cycle


def test_a_cycle_records_its_design_and_answers_in_order(run_db: Database) -> None:
    cycle = create(run_db, size=20, seed=7, strategy="random", reviewers=["ann", "bob"], created_by="lead")
    assert (
        cycle.name,
        cycle.judge_run,
        cycle.strategy,
        cycle.seed,
        cycle.size,
        cycle.status,
        cycle.created_by,
    ) == ("c1", RUN, "random", 7, 20, "open", "lead")
    assert cycles.get_cycle(run_db, "c1") == cycle
    items = cycles.cycle_answers(run_db, cycle.id)
    assert [i.answer_id for i in items] == list(cycle.answers)
    assert [i.position for i in items] == list(range(20))
    assert {i.inclusion_prob for i in items} == {0.5}
    assert {i.claims for i in items} == {2}
    assert [c.name for c in cycles.list_cycles(run_db)] == ["c1"]


def test_same_seed_same_sample_in_another_database(run_db: Database, tmp_path: Path) -> None:
    first = create(run_db, name="x", seed=42, strategy="stratified")
    with store.session(tmp_path / "other.db") as other:
        build_run(other)
        again = create(other, name="y", seed=42, strategy="stratified")
        differs = create(other, name="z", seed=43, strategy="stratified")
    assert again.answers == first.answers
    assert differs.answers != first.answers


def test_a_missing_seed_is_drawn_and_recorded(run_db: Database, tmp_path: Path) -> None:
    cycle = create(run_db, seed=None)
    assert isinstance(cycle.seed, int)
    with store.session(tmp_path / "other.db") as other:
        build_run(other)
        assert create(other, seed=cycle.seed).answers == cycle.answers


def test_stratified_cycle_matches_the_category_shares(run_db: Database) -> None:
    cycle = create(run_db, size=20, strategy="stratified")
    category = dict(run_db.execute("SELECT id, category FROM answers").fetchall())
    assert Counter(category[a] for a in cycle.answers) == {"cat-a": 10, "cat-b": 6, "cat-c": 4}


def test_failures_first_cycle_takes_every_failing_answer(run_db: Database) -> None:
    cycle = create(run_db, size=20, strategy="failures-first")
    items = cycles.cycle_answers(run_db, cycle.id)
    failing = {f"a{i:02d}" for i in range(10)}
    assert failing <= {i.answer_id for i in items}  # all 10 failing: n_F = ceil(0.5 * 20)
    prob = {i.answer_id: i.inclusion_prob for i in items}
    assert sorted(prob.values()) == pytest.approx([10 / 30] * 10 + [1.0] * 10)
    assert {a for a, p in prob.items() if p == 1.0} == failing
    # Over the pool (10 failing answers, 30 passing) the recorded pi sum to n.
    pi_failing, pi_passing = 1.0, min(prob.values())
    assert 10 * pi_failing + 30 * pi_passing == pytest.approx(cycle.size)


# ---------------------------------------------------------------- eligibility


def test_answers_with_every_claim_labeled_are_excluded(
    run_db: Database, claims_of: dict[str, list[int]]
) -> None:
    for i in range(8):  # a00..a07 fully labeled by a reviewer
        for pk in claims_of[f"a{i:02d}"]:
            store.record_label(run_db, claim=pk, reviewer="ann", kind="blind", verdict="SUPPORTED")
    for pk in claims_of["a08"]:  # a08 fully adjudicated
        store.adjudicate(run_db, claim=pk, adjudicator="lead", verdict="SUPPORTED")
    store.record_label(
        run_db, claim=claims_of["a09"][0], reviewer="ann", kind="blind", verdict="SUPPORTED"
    )  # a09 half labeled: still needs work
    for pk in claims_of["a10"]:  # a10 only skipped: no final label
        store.record_label(run_db, claim=pk, reviewer="ann", kind="skip")
    done = {f"a{i:02d}" for i in range(9)}
    cycle = create(run_db, size=30, seed=3)  # the pool is exactly the 31 eligible answers
    assert not done & set(cycle.answers)
    every = create(run_db, name="c2", size=31, seed=3, include_labeled=False, force=True)
    assert set(every.answers) == {f"a{i:02d}" for i in range(9, 40)}
    with_labeled = create(run_db, name="c3", size=30, seed=5, include_labeled=True)
    assert with_labeled.include_labeled
    assert len(create(run_db, name="c4", size=40, force=True, include_labeled=True).answers) == 40


def test_an_answer_with_a_disputed_or_unclear_claim_is_not_labeled(
    run_db: Database, claims_of: dict[str, list[int]]
) -> None:
    # Every claim of a00..a02 has some reviewer's verdict. On a00 two reviewers agree (done);
    # on a01 they disagree on one claim and nobody adjudicated; on a02 a second reviewer marked
    # a claim unclear. Only a00 has a final human label on every claim.
    for aid in ("a00", "a01", "a02"):
        for pk in claims_of[aid]:
            store.record_label(run_db, claim=pk, reviewer="ann", kind="blind", verdict="SUPPORTED")
    store.record_label(run_db, claim=claims_of["a00"][0], reviewer="bob", kind="blind", verdict="SUPPORTED")
    store.record_label(
        run_db, claim=claims_of["a01"][1], reviewer="bob", kind="blind", verdict="CONTRADICTED"
    )
    store.record_label(run_db, claim=claims_of["a02"][0], reviewer="bob", kind="unclear")
    pool = {
        r.answer_id: r.fully_labeled
        for r in cycles._pool_rows(run_db, run_db.execute("SELECT id FROM judge_runs").fetchone()[0])
    }
    assert (pool["a00"], pool["a01"], pool["a02"]) == (True, False, False)
    every = create(run_db, size=39, force=True)  # the whole pool: 40 answers less a00
    assert "a00" not in every.answers and {"a01", "a02"} <= set(every.answers)
    # Once a lead settles the disputed claim, a01 is done and leaves the pool.
    store.adjudicate(run_db, claim=claims_of["a01"][1], adjudicator="lead", verdict="SUPPORTED")
    again = create(run_db, name="c2", size=38, force=True)
    assert not {"a00", "a01"} & set(again.answers) and "a02" in again.answers


def test_holdout_answers_never_leak_into_a_tuning_cycle(run_db: Database) -> None:
    held = [f"a{i:02d}" for i in range(0, 40, 4)]  # 10 answers
    assert cycles.mark_holdout(run_db, held) == 10
    for seed in range(5):
        cycle = create(run_db, name=f"tune{seed}", size=30, seed=seed)
        assert not set(held) & set(cycle.answers)
    check = create(run_db, name="check", size=10, force=True, holdout=True)
    assert check.holdout and sorted(check.answers) == held
    assert cycles.holdout_answers(run_db) == held
    # An answer already seen by a tuning cycle cannot become holdout.
    with pytest.raises(ConflictError, match="non-holdout"):
        cycles.mark_holdout(run_db, [cycles.get_cycle(run_db, "tune0").answers[0]])
    assert cycles.mark_holdout(run_db, held[:2], False) == 2
    with pytest.raises(NotFoundError):
        cycles.mark_holdout(run_db, ["nope"])


def test_holdout_cycle_without_holdout_answers_is_an_error(run_db: Database) -> None:
    with pytest.raises(InputError, match="holdout"):
        create(run_db, holdout=True)


# ---------------------------------------------------------------- assignment


@pytest.mark.parametrize(("overlap", "doubled"), [(0.2, 4), (0.5, 10), (0.0, 0)])
def test_overlap_share_and_no_answer_twice_to_one_reviewer(
    run_db: Database, overlap: float, doubled: int
) -> None:
    cycle = create(run_db, size=20, reviewers=["ann", "bob", "cid"], overlap=overlap)
    items = cycles.cycle_answers(run_db, cycle.id)
    assert sum(len(i.reviewers) == 2 for i in items) == doubled
    assert all(len(i.reviewers) in (1, 2) for i in items)
    assert all(len(set(i.reviewers)) == len(i.reviewers) for i in items)
    load = Counter(r for i in items for r in i.reviewers)
    assert max(load.values()) - min(load.values()) <= 1  # balanced
    for reviewer in ("ann", "bob", "cid"):
        queue = cycles.queue(run_db, cycle.id, reviewer)
        assert queue == [i.answer_id for i in items if reviewer in i.reviewers]  # cycle order
    assert cycles.queue(run_db, cycle.id, "dan") == []


def test_overlap_pairs_rotate_over_every_pair_of_reviewers() -> None:
    answers = [f"a{i}" for i in range(30)]
    out = cycles.assign(answers, ["ann", "bob", "cid"], 0.2)
    pairs = Counter(frozenset(rs) for rs in out.values() if len(rs) == 2)
    assert len(pairs) == 3 and sum(pairs.values()) == 6


def test_one_reviewer_gets_everything_with_a_warning(run_db: Database) -> None:
    cycle = create(run_db, reviewers=[" ann ", ""], overlap=0.2)
    assert cycle.reviewers == ("ann",) and cycle.overlap == 0
    assert any("two reviewers" in w for w in cycle.warnings)
    assert cycles.queue(run_db, cycle.id, "ann") == list(cycle.answers)


def test_reviewer_names_are_normalised_and_duplicates_refused(run_db: Database) -> None:
    with pytest.raises(InputError, match="listed once") as err:
        create(run_db, reviewers=["a", " a", "A", "bob", "Bob "])
    assert err.value.lines() == [
        "reviewers: each reviewer may be listed once (names are compared "
        "ignoring case, spacing and invisible characters), but these are the same: "
        "'a', 'a', 'A'; 'bob', 'Bob'"
    ]
    assert cycles.list_cycles(run_db) == []
    cycle = create(run_db, reviewers=["ann\t lee", " bob  ", ""])
    assert cycle.reviewers == ("ann lee", "bob")


def test_open_cycle_queue_is_every_answer_for_anyone(run_db: Database) -> None:
    open_cycle = create(run_db, name="open", reviewers=[])
    assigned = create(run_db, name="assigned", reviewers=["ann", "bob"])
    assert open_cycle.is_open_to_all and open_cycle.overlap == 0
    assert cycles.queue(run_db, open_cycle.id, "zoe") == list(open_cycle.answers)
    assert [c.name for c in cycles.open_cycles_for(run_db, "zoe")] == ["open"]
    assert [c.name for c in cycles.open_cycles_for(run_db, "ann")] == ["open", "assigned"]
    cycles.close_cycle(run_db, "open", force=True)
    assert [c.name for c in cycles.open_cycles_for(run_db, "ann")] == ["assigned"]
    assert assigned.reviewers == ("ann", "bob")


# ---------------------------------------------------------------- bounds and errors


def test_size_outside_bounds_needs_force_and_warns_about_the_interval(run_db: Database) -> None:
    with pytest.raises(InputError, match="outside 15-30"):
        create(run_db, size=10)
    cycle = create(run_db, size=10, force=True)
    assert cycle.size == 10
    # 10 answers x 2 claims = 20 claims: Wilson half-width at p = 0.85 is about 15 points.
    assert any("20 claims" in w and "±15." in w for w in cycle.warnings)
    with pytest.raises(InputError, match="at least 1"):
        create(run_db, name="c0", size=0, force=True)


def test_a_pool_smaller_than_the_size_is_refused_unless_forced(run_db: Database) -> None:
    cycles.mark_holdout(run_db, [f"a{i:02d}" for i in range(12)])
    with pytest.raises(InputError, match="only 12 eligible"):
        create(run_db, size=20, holdout=True)
    cycle = create(run_db, size=20, holdout=True, force=True)
    assert cycle.size == 12 and any("all of them" in w for w in cycle.warnings)


def test_clear_errors(run_db: Database, claims_of: dict[str, list[int]]) -> None:
    with pytest.raises(NotFoundError, match="unknown judge run"):
        create(run_db, judge_run="other@v9")
    create(run_db, name="dup")
    with pytest.raises(ConflictError, match="already exists"):
        create(run_db, name="dup")
    with pytest.raises(InputError) as err:
        create(run_db, name=" ", strategy="cluster", overlap=1.5, seed=-2)
    assert len(err.value.lines()) == 4
    for pks in claims_of.values():
        for pk in pks:
            store.record_label(run_db, claim=pk, reviewer="ann", kind="blind", verdict="SUPPORTED")
    with pytest.raises(InputError) as err:
        create(run_db, name="empty")
    assert "--include-labeled" in err.value.lines(FLAGS)[0]
    with pytest.raises(NotFoundError):
        cycles.get_cycle(run_db, "missing")


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"seed": 2**64}, f"seed: must be a whole number from 0 to {2**63 - 1}, or none to draw one"),
        ({"seed": 10**30}, "seed: must be a whole number from 0 to"),
        ({"size": 10**30, "force": True}, "size: must be at least 1 and at most 1000 (answers in one cycle)"),
        ({"name": "week 1\nc9\topen"}, "name: 'week 1<U+000A>c9<U+0009>open' contains the control character"),
        ({"name": "x" * 100_000}, "name: 100,000 characters is too long; a cycle name has at most 200"),
        ({"name": "wk\u202e1"}, "contains the bidirectional control U+202E"),
        (
            {"reviewers": ["", "", "", ""]},
            "reviewers: the list names nobody; name the reviewers, or give none",
        ),
    ],
)
def test_what_a_cycle_cannot_hold_is_refused_in_one_sentence(
    run_db: Database, given: dict[str, object], says: str
) -> None:
    with pytest.raises(InputError) as err:
        create(run_db, **given)
    assert [line for line in err.value.lines() if says in line], err.value.lines()
    assert len(err.value.lines()) == 1
    assert cycles.list_cycles(run_db) == []


def test_the_bounds_themselves_are_accepted_and_redraw_the_sample(run_db: Database) -> None:
    top = create(run_db, "c1", seed=2**63 - 1, size=cycles.SIZE_LIMIT, force=True)
    again = create(run_db, "x" * cycles.NAME_LIMIT, seed=2**63 - 1, size=cycles.SIZE_LIMIT, force=True)
    assert top.seed == again.seed == 2**63 - 1 and top.answers == again.answers
    assert cycles.get_cycle(run_db, "x" * cycles.NAME_LIMIT).seed == 2**63 - 1
    # Blank text is no list: an open cycle.
    assert cycles.typed_reviewers(" ") == [] and cycles.typed_reviewers(",,,") == ["", "", "", ""]
    assert create(run_db, "c3", reviewers=cycles.typed_reviewers("")).is_open_to_all


@pytest.mark.parametrize(
    ("raw", "size"),
    [
        ("25", 25),
        ("1000", 1000),
        ("\u00b2", None),
        ("9" * 5000, None),
        ("0", None),
        ("1001", None),
        ("", None),
    ],
)
def test_a_links_size_is_read_only_within_the_bounds(raw: str, size: int | None) -> None:
    assert cycles.size_from_link(raw) == size


# ---------------------------------------------------------------- progress and closing


def label_all(
    db: Database, pks: list[int], reviewer: str, cycle_id: int | None = None, verdict: str = "SUPPORTED"
) -> None:
    for pk in pks:
        store.record_label(db, claim=pk, reviewer=reviewer, kind="blind", verdict=verdict, cycle_id=cycle_id)


def test_progress_counts_the_assigned_reviewers_own_labels(
    run_db: Database, claims_of: dict[str, list[int]]
) -> None:
    cycle = create(run_db, size=20, reviewers=["ann", "bob"], overlap=0.2)
    items = cycles.cycle_answers(run_db, cycle.id)
    solo = [i.answer_id for i in items if i.reviewers == ("ann",)]
    shared = next(i.answer_id for i in items if len(i.reviewers) == 2)
    label_all(run_db, claims_of[solo[0]] + claims_of[solo[1]][:1], "ann", cycle.id)
    store.record_label(run_db, claim=claims_of[solo[2]][0], reviewer="ann", kind="skip")
    label_all(run_db, claims_of[shared], "ann", cycle.id)  # bob still owes these two
    label_all(run_db, claims_of[solo[3]], "zoe")  # not assigned here: labeled outside the cycle
    prog = cycles.progress(run_db, cycle.id)
    # Done: solo[0] (2 claims) and solo[1]'s first claim; the shared answer waits for bob.
    assert (prog.labeled, prog.total, prog.labeled_elsewhere) == (3, 40, 2)
    n_ann = 2 * len(cycles.queue(run_db, cycle.id, "ann"))
    per = {r.reviewer: (r.labeled, r.total) for r in prog.reviewers}
    assert per == {"ann": (5, n_ann), "bob": (0, 48 - n_ann)}
    assert prog.missing == 48 - 5
    # Labels owed (a shared claim owes one per reviewer) beside the claims not done, as the table counts them.
    assert prog.outstanding() == (
        f"2 of 2 reviewers have labels outstanding: {48 - 5} labels on 37 of 40 claims"
    )


def test_an_include_labeled_cycle_starts_at_zero(run_db: Database, claims_of: dict[str, list[int]]) -> None:
    for pks in claims_of.values():  # every claim labeled before the cycle, by an import
        for pk in pks:
            store.record_label(run_db, claim=pk, reviewer="imported", kind="import", verdict="SUPPORTED")
    cycle = create(run_db, size=20, reviewers=["ann", "bob", "cid"], overlap=0.0, include_labeled=True)
    prog = cycles.progress(run_db, cycle.id)
    assert (prog.labeled, prog.total, prog.labeled_elsewhere) == (0, 40, 40)
    assert prog.fraction == 0 and {r.labeled for r in prog.reviewers} == {0}
    assert prog.headline() == "0/40 claims finished (already labeled outside this cycle: 40)"
    for aid in cycles.queue(run_db, cycle.id, "ann"):
        label_all(run_db, claims_of[aid], "ann", cycle.id)
    prog = cycles.progress(run_db, cycle.id)
    ann = next(r for r in prog.reviewers if r.reviewer == "ann")
    assert prog.labeled == ann.total and prog.labeled_elsewhere == 40 - ann.total
    assert prog.outstanding() == (
        "2 of 3 reviewers have labels outstanding: "
        f"{40 - ann.total} labels on {prog.total - prog.labeled} of "
        f"{prog.total} claims"
    )


def test_open_cycle_progress_counts_its_reviewers_labels_wherever_given(
    run_db: Database, claims_of: dict[str, list[int]]
) -> None:
    cycle = create(run_db, size=15, reviewers=[])
    first, second, third, fourth = cycle.answers[:4]
    label_all(run_db, claims_of[first], "ann", cycle.id)
    label_all(run_db, claims_of[second][:1], "bob", cycle.id)
    label_all(run_db, claims_of[third], "ann")  # ann's own, given elsewhere: done, and reused
    label_all(run_db, claims_of[fourth], "zoe")  # zoe never worked here: labeled outside
    prog = cycles.progress(run_db, cycle.id)
    assert (prog.labeled, prog.total, prog.reused, prog.labeled_elsewhere) == (5, 30, 2, 2)
    assert {r.reviewer: (r.labeled, r.total, r.reused) for r in prog.reviewers} == {
        "ann": (4, 30, 2),
        "bob": (1, 30, 0),
    }
    assert prog.headline() == (
        "5/30 claims finished (2 reused from other cycles or imports; already labeled outside this cycle: 2)"
    )
    assert prog.outstanding() == "25 of 30 claims have no label yet"


def test_closing_with_work_outstanding_needs_force(run_db: Database, claims_of: dict[str, list[int]]) -> None:
    cycle = create(run_db, size=20, reviewers=["ann", "bob", "cid"], overlap=0.0)
    for aid in cycles.queue(run_db, cycle.id, "ann"):
        label_all(run_db, claims_of[aid], "ann", cycle.id)
    owed = 40 - 2 * len(cycles.queue(run_db, cycle.id, "ann"))
    with pytest.raises(cycles.WorkOutstandingError) as err:
        cycles.close_cycle(run_db, "c1")
    assert err.value.lines(FLAGS) == [
        f"cycle 'c1' still has work: 2 of 3 reviewers have labels outstanding: "
        f"{owed} labels on {owed} of 40 claims; use --force to close it anyway "
        "(its figures are frozen at close)"
    ]
    with pytest.raises(cycles.WorkOutstandingError) as err:
        cycles.close_cycle(run_db, "c1")
    assert err.value.lines({Option.FORCE_CLOSE: "the box 'Close anyway'"})[0].endswith(
        "; use the box 'Close anyway' to close it anyway (its figures are frozen at close)"
    )
    assert cycles.get_cycle(run_db, "c1").status == "open"
    assert cycles.close_cycle(run_db, "c1", force=True).status == "closed"
    # With every assigned label given, closing needs no force.
    done = create(run_db, name="c2", size=15, reviewers=["ann"], include_labeled=True)
    for aid in done.answers:
        label_all(run_db, claims_of[aid], "ann", done.id)
    assert cycles.progress(run_db, done.id).outstanding() is None
    assert cycles.close_cycle(run_db, "c2").status == "closed"


def test_closing_freezes_a_snapshot(run_db: Database, claims_of: dict[str, list[int]]) -> None:
    cycle = create(run_db, size=15, reviewers=[])
    for n, aid in enumerate(cycle.answers[:5]):
        # The judge said SUPPORTED on c1 everywhere; one human disagreement keeps kappa defined.
        pks = claims_of[aid]
        label_all(run_db, pks[:1], "ann", cycle.id, "CONTRADICTED" if n == 0 else "SUPPORTED")
        label_all(run_db, pks[1:], "ann", cycle.id, "UNSUPPORTED" if aid < "a10" else "SUPPORTED")
    closed = cycles.close_cycle(run_db, "c1", force=True)
    assert closed.status == "closed" and closed.closed_at
    snap = closed.snapshot
    assert snap is not None and snap["progress"]["labeled"] == 10 and snap["progress"]["total"] == 30
    assert sum(snap["counts"].values()) == 30 and snap["counts"]["unlabeled"] == 20
    assert len(snap["claims"]) == 30
    # The statistics module's report is stored: agreement and kappa, each with its interval.
    report = snap["agreement"]
    assert report["n_claims"] == 10 and report["judge_run"] == RUN
    assert report["agreement"]["value"] == pytest.approx(0.9)
    assert report["agreement"]["ci_low"] < 0.9 < report["agreement"]["ci_high"]
    assert report["kappa"]["value"] is not None and "ci_low" in report["kappa"]
    assert report["flag"]["status"] in ("ok", "revise", "inconclusive")
    fig = cycles.frozen_figures(snap)
    assert fig is not None
    a = fig.assessment
    assert a is not None
    assert (a.counts.labeled, fig.labeled, fig.total, fig.frozen_at) == (10, 10, 30, snap["frozen_at"])
    assert a.raw_agreement.value == pytest.approx(0.9) and a.raw_agreement.low is not None
    assert a.agreement == assessment.of_report(report, scope="").agreement
    assert a.raw_kappa.value == report["kappa"]["value"] and a.status == report["flag"]["status"]
    # Later labels change nothing frozen; a cycle closes once.
    store.record_label(
        run_db, claim=claims_of[cycle.answers[9]][0], reviewer="bob", kind="blind", verdict="CONTRADICTED"
    )
    assert cycles.get_cycle(run_db, "c1").snapshot == snap
    with pytest.raises(ConflictError, match="already closed"):
        cycles.close_cycle(run_db, "c1")
    given = create(run_db, name="c2")
    assert cycles.close_cycle(run_db, "c2", {"note": "given"}, force=True).snapshot == {"note": "given"}
    assert given.status == "open"
    assert cycles.frozen_figures({"note": "given"}) == cycles.FrozenFigures(
        None, None, None, None, None, None, None, (), "given"
    )
    assert cycles.frozen_figures(None) is None


def test_closing_with_no_labels_stores_counts_only(run_db: Database) -> None:
    create(run_db)
    snap = cycles.close_cycle(run_db, "c1", force=True).snapshot
    assert snap is not None and snap["agreement"] is None and "note" in snap


# ---------------------------------------------------------------- design, runs, wording


def test_failures_first_states_its_design_and_records_the_share(run_db: Database) -> None:
    cycle = create(run_db, size=15, strategy="failures-first")
    # 10 failing answers of 40: 8 of 15 slots (ceil(0.5 * 15)), pi 0.8 vs 7/30.
    assert cycle.notes == (
        (
            "failing answers: 8 of 15 slots, passing 7; "
            "answers with a failing verdict were drawn 3.4× as often; figures are re-weighted"
        ),
    )
    assert cycle.warnings == () and cycle.failing_share == 0.5
    more = create(run_db, name="c2", size=15, strategy="failures-first", failing_share=0.6)
    assert more.notes == (
        (
            "failing answers: 9 of 15 slots, passing 6; "
            "answers with a failing verdict were drawn 4.5× as often; figures are re-weighted"
        ),
    )
    assert cycles.get_cycle(run_db, "c2").failing_share == 0.6
    assert create(run_db, name="c3", size=15).failing_share is None  # random: no share
    with pytest.raises(InputError, match="failing share"):
        create(run_db, name="c4", strategy="failures-first", failing_share=1.5)


def test_failures_first_warns_when_failures_are_the_majority(fresh_db: Database) -> None:
    with store.write(fresh_db):
        run_id = store.run_id(fresh_db, "judge", "v1")
        assert run_id is not None  # made when missing
        for i in range(100):  # 63 failing answers, as in WiCE
            add_answer(fresh_db, run_id, f"w{i:03d}", ["UNSUPPORTED" if i < 63 else "SUPPORTED"])
    cycle = create(fresh_db, size=20, strategy="failures-first")
    assert cycle.notes == (
        (
            "failing answers: 13 of 20 slots, passing 7; "
            "answers with a failing verdict were drawn 1.1× as often; figures are re-weighted"
        ),
    )
    assert cycle.warnings == (
        "hardly oversampled: failures are already the majority (63 of 100 eligible answers), so a "
        "failing answer is only 1.09× as likely to be drawn as a passing one; raise the failing "
        "share to oversample them",
    )
    more = create(fresh_db, name="c2", size=20, strategy="failures-first", failing_share=0.8)
    assert more.notes == (
        (
            "failing answers: 16 of 20 slots, passing 4; "
            "answers with a failing verdict were drawn 2.3× as often; figures are re-weighted"
        ),
    )
    assert more.warnings == ()


def test_sampleable_runs_and_the_default_run(run_db: Database) -> None:
    with store.write(run_db):  # a later judge-lab run that failed: no verdicts at all
        store.run_id(run_db, "lab", "broken", origin="judge-lab")
    assert [r.name for r in store.judge_runs(run_db)] == [RUN, "lab@broken"]
    assert [r.name for r in cycles.sampleable_runs(run_db)] == [RUN]
    default = cycles.default_run(run_db)
    assert default is not None and default.name == RUN
    assert cycles.create_cycle(run_db, name="c1", seed=1).judge_run == RUN  # None: the same default


def test_errors_name_the_callers_controls(run_db: Database, claims_of: dict[str, list[int]]) -> None:
    names = {Option.FORCE: "the box 'Force'", Option.INCLUDE_LABELED: "the box 'Include'"}
    with pytest.raises(InputError) as err:
        create(run_db, size=10)
    assert err.value.lines(names) == [
        "size: 10 is outside 15-30; use the box 'Force' to create the cycle anyway"
    ]
    assert err.value.lines(FLAGS) == ["size: 10 is outside 15-30; use --force to create the cycle anyway"]
    for pks in claims_of.values():
        label_all(run_db, pks, "ann")
    with pytest.raises(InputError) as err:
        create(run_db)
    assert err.value.lines(names) == [
        "no eligible answers in run judge@v1: all 40 non-holdout answers already have a final human "
        "label on every claim; use the box 'Include' to sample them anyway"
    ]
    assert "--" not in str(err.value)


def test_messages_use_the_singular_for_one(run_db: Database) -> None:
    cycles.mark_holdout(run_db, ["a05"])
    with pytest.raises(InputError) as err:
        create(run_db, size=20, holdout=True)
    assert "only 1 eligible answer in run" in str(err.value)
    cycle = create(run_db, size=20, holdout=True, force=True)
    assert "only 1 eligible answer: the cycle takes all of them" in cycle.warnings
    assert any("with 2 claims the 95% Wilson" in w for w in cycle.warnings)
    progress = cycles.CycleProgress(
        0, 1, (cycles.ReviewerProgress("ann", 0, 1), cycles.ReviewerProgress("bob", 2, 2))
    )
    assert progress.outstanding() == "1 of 2 reviewers has labels outstanding: 1 label on 1 of 1 claim"
    assert cycles.CycleProgress(0, 1, (), assigned=False).outstanding() == "1 of 1 claim has no label yet"
    assert cycles.CycleProgress(
        1, 1, (cycles.ReviewerProgress("ann", 1, 1, unclear=1),), unclear=1
    ).outstanding() == ("1 claim marked unclear waits for a lead's decision")


# ---------------------------------------------------------------- CLI on the real WiCE data


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert_no_traceback(out, f"stdout of calibration {' '.join(argv)}")
    assert_no_traceback(err, f"stderr of calibration {' '.join(argv)}")
    return rc, out, err


def test_cli_cycle_on_wice_gives_20_answers(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(db_path)
    assert run_cli(capsys, "--db", db, "import", str(WICE / "wice_judged_gpt4.jsonl"))[0] == 0
    rc, out, err = run_cli(
        capsys,
        "--db",
        db,
        "cycle",
        "create",
        "--name",
        "wice-1",
        "--judge-run",
        "gpt-4-0613@wice-gpt4",
        "--seed",
        "5",
        "--reviewers",
        "ann,bob",
    )
    assert rc == 0, err
    rc, out, _ = run_cli(capsys, "--db", db, "cycle", "show", "wice-1", "--json")
    shown = json.loads(out)
    assert (shown["name"], shown["judge_run"], shown["strategy"], shown["seed"], shown["status"]) == (
        "wice-1",
        "gpt-4-0613@wice-gpt4",
        "random",
        5,
        "open",
    )
    ids = {json.loads(line)["id"] for line in (WICE / "wice_judged_gpt4.jsonl").open()}
    assert len(shown["answers"]) == 20 and len(set(shown["answers"])) == 20
    assert set(shown["answers"]) <= ids
    assert [i["answer_id"] for i in shown["items"]] == shown["answers"]
    rc, out, _ = run_cli(capsys, "--db", db, "cycle", "list")
    assert rc == 0 and "wice-1" in out and "0/20 claims finished" in out and "20 answers" in out
    # Work remains (nobody labeled anything): close refuses unless forced.
    rc, out, err = run_cli(capsys, "--db", db, "cycle", "close", "wice-1")
    assert rc == 1 and out == ""
    assert "2 of 2 reviewers have labels outstanding: " in err and "use --force" in err
    rc, out, _ = run_cli(capsys, "--db", db, "cycle", "close", "wice-1", "--force")
    assert rc == 0 and "closed: 0/" in out


def test_cli_failures_first_on_wice_states_the_design(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(db_path)
    run_cli(capsys, "--db", db, "import", str(WICE / "wice_judged_gpt4.jsonl"))
    rc, out, err = run_cli(
        capsys, "--db", db, "cycle", "create", "--name", "ff", "--seed", "5", "--strategy", "failures-first"
    )
    assert rc == 0, err
    # 63 of the 100 WiCE answers hold a non-SUPPORTED verdict.
    assert (
        "failing answers: 13 of 20 slots, passing 7; "
        "answers with a failing verdict were drawn 1.1× as often; figures are re-weighted"
    ) in out
    assert "warning: hardly oversampled: failures are already the majority" in err
    rc, out, err = run_cli(
        capsys,
        "--db",
        db,
        "cycle",
        "create",
        "--name",
        "ff2",
        "--seed",
        "5",
        "--strategy",
        "failures-first",
        "--failure-share",
        "0.8",
    )
    assert rc == 0 and "16 of 20 slots" in out and "hardly" not in err
    rc, out, _ = run_cli(capsys, "--db", db, "cycle", "show", "ff2", "--json")
    assert json.loads(out)["failing_share"] == 0.8
    rc, out, err = run_cli(capsys, "--db", db, "cycle", "create", "--name", "dup", "--reviewers", "a, a, A")
    assert rc == 1 and "listed once" in err and "'a', 'a', 'A'" in err


def test_cli_closes_a_labeled_cycle_with_its_figures(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(db_path)
    run_cli(capsys, "--db", db, "import", str(WICE / "wice_judged_gpt4.jsonl"))
    run_cli(capsys, "--db", db, "import-labels", str(WICE / "wice_human_labels.csv"))
    rc, _, err = run_cli(
        capsys, "--db", db, "cycle", "create", "--name", "all", "--seed", "2", "--include-labeled"
    )
    assert rc == 0, err
    rc, out, _ = run_cli(capsys, "--db", db, "cycle", "show", "all")
    assert "progress: 0/20 claims finished (already labeled outside this cycle: 20)" in out
    rc, out, err = run_cli(capsys, "--db", db, "cycle", "close", "all", "--force")
    assert rc == 0, err
    assert "closed: 0/20 claims finished (already labeled outside this cycle: 20)" in out
    # The figures read as everywhere else (calibration.fmt): one decimal, an en dash between bounds.
    # The cycle's assessment, its basis named: what Trend shows for it.
    agreement = r"judge-human agreement \d+\.\d% on 20 claims: 95% CI \d+\.\d%–\d+\.\d% \(design-based"
    assert re.search(agreement, out), out
    kappa = r"Cohen's kappa -?\d\.\d\d: (95% CI -?\d\.\d\d–-?\d\.\d\d \(design-based\)|no interval)"
    assert re.search(kappa, out), out
    assert "flag: " in out


def test_cli_errors_exit_1_with_a_message(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(db_path)
    run_cli(capsys, "--db", db, "import", str(WICE / "wice_judged_gpt4.jsonl"))
    run_cli(capsys, "--db", db, "import-labels", str(WICE / "wice_human_labels.csv"))
    cases = [
        (["--judge-run", "nope@v0"], "unknown judge run"),
        (["--size", "40"], "outside 15-30"),
        ([], "--include-labeled"),  # every WiCE claim has its human label
    ]
    for extra, message in cases:
        rc, out, err = run_cli(capsys, "--db", db, "cycle", "create", "--name", "x", *extra)
        assert rc == 1 and message in err and out == ""
    rc, _, err = run_cli(capsys, "--db", db, "cycle", "create", "--name", "x", "--include-labeled")
    assert rc == 0, err
    rc, _, err = run_cli(capsys, "--db", db, "cycle", "show", "nope")
    assert rc == 1 and "no cycle named" in err


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--seed", str(2**64)], "error: seed: must be a whole number from 0 to 9223372036854775807"),
        (["--seed", str(10**30)], "error: seed: must be a whole number from 0 to"),
        (["--name", "week 1\nc9"], "error: name: 'week 1<U+000A>c9' contains the control character"),
        (["--name", "n" * 100_000], "error: name: 100,000 characters is too long"),
        (["--reviewers", ",,,"], "error: reviewers: the list names nobody"),
    ],
)
def test_cli_create_refuses_in_one_line_and_creates_nothing(
    run_db: Database, db_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    argv = ["--db", str(db_path), "cycle", "create", "--name", "x", "--judge-run", RUN, *extra]
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 1 and out == "" and err.startswith(says) and err.count("\n") == 1, err
    assert cycles.list_cycles(run_db) == []
    assert run_cli(capsys, "--db", str(db_path), "cycle", "list")[1] == "no cycles yet\n"


def test_cli_holdout(run_db: Database, db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(db_path)
    rc, out, _ = run_cli(capsys, "--db", db, "holdout", "add", "a01", "a02")
    assert rc == 0 and out.startswith("2 answers")
    assert run_cli(capsys, "--db", db, "holdout", "list")[1].split() == ["a01", "a02"]
    assert run_cli(capsys, "--db", db, "holdout", "remove", "a02")[1] == "1 answer removed from holdout\n"
    rc, _, err = run_cli(capsys, "--db", db, "holdout", "add", "zz")
    assert rc == 1 and "unknown answer" in err


# ---------------------------------------------------------------- the Cycles page


def page(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    from calibration_app import signin

    monkeypatch.setenv("CALIBRATION_DB", str(db_path))
    # Through the app's navigation: the page links to the Dashboard.
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    at.session_state[signin.REVIEWER_KEY] = "lead"
    return at.switch_page("pages/cycles.py").run()


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def click(at: AppTest, label: str) -> AppTest:
    return next(b for b in at.button if b.label == label).click().run()


def test_page_creates_a_cycle_and_lists_it(
    run_db: Database, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = page(db_path, monkeypatch)
    assert not at.exception
    assert [i.value for i in at.info] == ["No cycles yet."]

    at.text_input(key="cycle_name").input("week 1")
    at.text_input(key="cycle_seed").input("9")
    at.text_input(key="cycle_reviewers").input("ann, bob")
    click(at, "Create cycle")
    assert not at.exception
    # Nobody called ann or bob has signed in, labeled or been assigned: a warning, not a refusal.
    assert next(s.value for s in at.warning) == "Cycle created, with warnings."
    assert any("not yet known here" in t and "'ann', 'bob'" in t for t in texts(at))
    assert "week 1: 20 answers of judge@v1, random, seed 9" in texts(at)
    table = at.dataframe[0].value
    assert list(table["Name"]) == ["week 1"] and list(table["Claims finished"]) == ["0 / 40"]
    assert list(table["Done"]) == [0.0] and list(table["Labeled outside"]) == [0]
    assert list(table["Reviewers"]) == ["ann, bob"]
    # The design is the chosen cycle's, below the table (the table keeps to the page's width).
    assert "Created by" not in table and "Seed" not in table
    assert any(t.startswith("Created ") and t.endswith(" by lead") for t in texts(at))
    assert "week 1 · judge@v1 · random · seed 9" in texts(at)
    # Timestamps are datetimes shown through a date format, not raw ISO text.
    assert str(table["Created"].dtype).startswith("datetime64")
    assert cycles.get_cycle(run_db, "week 1").created_by == "lead"
    # A successful create clears the name and the seed; other choices stay.
    assert at.text_input(key="cycle_name").value == ""
    assert at.text_input(key="cycle_seed").value == ""
    assert at.text_input(key="cycle_reviewers").value == "ann, bob"

    # A refused form shows the reason in the page's words, and keeps what was typed.
    at.text_input(key="cycle_name").input("week 2")
    at.number_input(key="cycle_size").set_value(10)
    click(at, "Create cycle")
    assert [e.value for e in at.error] == ["The cycle was not created."]
    assert (
        "size: 10 is outside 15-30; use the box 'Force a size outside 15–30' to create the cycle anyway"
        in texts(at)
    )
    assert not any("--" in t for t in texts(at))
    assert len(at.dataframe[0].value) == 1
    assert at.text_input(key="cycle_name").value == "week 2"

    at.checkbox(key="cycle_force").check()
    click(at, "Create cycle")
    assert [w.value for w in at.warning][:1] == ["Cycle created, with warnings."]
    assert any("Wilson" in t for t in texts(at))
    # A blank seed is drawn, and the message says which.
    seed = cycles.get_cycle(run_db, "week 2").seed
    assert (
        f"week 2: 10 answers of judge@v1, random, seed {seed} (drawn: enter it as the seed to "
        "draw this sample again)" in texts(at)
    )
    assert list(at.dataframe[0].value["Name"]) == ["week 2", "week 1"]  # newest first
    assert at.selectbox(key="cycle_detail").value == "week 2"  # the new cycle's details

    # Nobody labeled anything: the close control says so and asks to close anyway.
    week2 = cycles.get_cycle(run_db, "week 2")
    total = cycles.progress(run_db, week2.id).total
    assert (
        f"Work remains: 2 of 2 reviewers have labels outstanding: 24 labels on {total} of {total} claims."
    ) in [w.value for w in at.warning]
    confirm = at.checkbox(key=f"cycle_close_confirm_{week2.id}")
    assert confirm.label.startswith("Close anyway")
    assert at.button(key="cycle_close").disabled
    confirm.check().run()
    at.button(key="cycle_close").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Cycle closed; its figures are frozen."]
    assert list(at.dataframe[0].value["Status"]) == ["closed", "open"]
    assert any("no agreement figures were frozen" in i.value for i in at.info)
    assert [e.label for e in at.expander if e.label.startswith("Raw")] == ["Raw snapshot (JSON)"]


def test_page_form_errors_name_the_form_controls(
    run_db: Database, db_path: Path, claims_of: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for pks in claims_of.values():
        label_all(run_db, pks, "ann")
    at = page(db_path, monkeypatch)
    at.text_input(key="cycle_name").input("x")
    at.text_input(key="cycle_reviewers").input("a, a, A")
    click(at, "Create cycle")
    assert [e.value for e in at.error] == ["The cycle was not created."]
    assert any("listed once" in t and "'a', 'a', 'A'" in t for t in texts(at))
    at.text_input(key="cycle_reviewers").input("")
    click(at, "Create cycle")
    assert any(
        t.endswith("use the box 'Include already-labeled answers' to sample them anyway") for t in texts(at)
    )
    assert not any("--" in t for t in texts(at))


@pytest.mark.parametrize("size", ["\u00b2", "9" * 5000, "0", "1001"])
def test_page_opened_by_a_link_with_a_size_no_cycle_takes_starts_at_the_default(
    run_db: Database, db_path: Path, monkeypatch: pytest.MonkeyPatch, size: str
) -> None:
    from calibration_app import signin

    monkeypatch.setenv("CALIBRATION_DB", str(db_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    at.session_state[signin.REVIEWER_KEY] = "lead"
    at.query_params["plan"] = "1"
    at.query_params["size"] = size
    at.switch_page("pages/cycles.py").run()
    assert not at.exception
    assert at.number_input(key="cycle_size").value == cycles.DEFAULT_SIZE
    assert "The link's size is not a whole number from 1 to 1000; the form starts at 20." in [
        c.value for c in at.caption
    ]


@pytest.mark.parametrize(
    ("control", "value", "says"),
    [
        ("cycle_seed", str(2**64), "seed: must be a whole number from 0 to 9223372036854775807"),
        ("cycle_seed", "9" * 5000, "seed: must be a whole number, or blank to draw one"),
        ("cycle_reviewers", ",,,", "reviewers: the list names nobody"),
        ("cycle_name", "week 1\nc9", "name: 'week 1<U+000A>c9' contains the control character"),
    ],
)
def test_page_form_refuses_what_no_cycle_holds_in_a_sentence(
    run_db: Database, db_path: Path, monkeypatch: pytest.MonkeyPatch, control: str, value: str, says: str
) -> None:
    at = page(db_path, monkeypatch)
    at.text_input(key="cycle_name").input("week 1")
    at.text_input(key=control).input(value)
    click(at, "Create cycle")
    assert not at.exception
    assert [e.value for e in at.error] == ["The cycle was not created."]
    assert [t for t in texts(at) if t.startswith(says)], texts(at)
    assert cycles.list_cycles(run_db) == []


def test_page_shows_the_frozen_figures(
    run_db: Database, db_path: Path, claims_of: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    cycle = create(run_db, size=15, reviewers=["ann"], strategy="failures-first")
    for aid in cycle.answers:
        label_all(run_db, claims_of[aid][:1], "ann", cycle.id, "SUPPORTED")
        label_all(
            run_db,
            claims_of[aid][1:],
            "ann",
            cycle.id,
            "UNSUPPORTED" if aid in cycle.answers[:3] else "SUPPORTED",
        )
    at = page(db_path, monkeypatch)
    assert not [w for w in at.warning if w.value.startswith("Work remains")]
    confirm = at.checkbox(key=f"cycle_close_confirm_{cycle.id}")
    assert confirm.label.startswith("Closing freezes")
    confirm.check().run()
    at.button(key="cycle_close").click().run()
    assert not at.exception
    snap = cycles.get_cycle(run_db, "c1").snapshot
    assert snap is not None and snap["agreement"]["kappa"]["value"] is not None
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Raw agreement"] == fmt.pct(snap["agreement"]["agreement"]["value"])
    frozen = assessment.of_snapshot(snap)
    assert frozen is not None
    # Kappa as Trend shows it for this cycle: the design-based estimate, not the raw figure.
    assert metrics["Cohen's kappa"] == fmt.num(frozen.kappa.value)
    # The decision header the Dashboard draws, from the frozen assessment.
    header = dashboard.decision(frozen)
    assert metrics["Agreement"] == header.figure
    assert f"### :{header.colour}[{header.word}]" in [m.value for m in at.markdown]
    assert header.sentence in texts(at)
    assert metrics["Claims in the figures"] == "30"
    captions = [c.value for c in at.caption]
    assert any(c.startswith("95% CI ") and c.endswith("Wilson interval)") for c in captions)
    assert any(
        c.startswith("Some answers were drawn more often than others. Weighted by 1/π per answer")
        for c in captions
    )
    assert any(c.startswith("Figures frozen at close, ") for c in captions)
    assert [e.label for e in at.expander if e.label.startswith("Raw")] == ["Raw snapshot (JSON)"]


def test_page_draws_an_older_snapshot_without_progress_with_no_none(
    run_db: Database, db_path: Path, claims_of: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    cycle = create(run_db, size=15, reviewers=["ann"])
    for aid in cycle.answers:
        label_all(run_db, claims_of[aid], "ann", cycle.id, "SUPPORTED")
    cycles.close_cycle(run_db, "c1")
    snap = dict(cycles.get_cycle(run_db, "c1").snapshot or {})
    del snap["progress"]  # as an older release froze it
    with store.write(run_db):
        run_db.execute(
            "UPDATE cycles SET snapshot = :snapshot WHERE id = :id",
            {"snapshot": json.dumps(snap), "id": cycle.id},
        )
    at = page(db_path, monkeypatch)
    assert not at.exception
    shown = [c.value for c in at.caption] + texts(at)
    assert any(c.startswith("15 answers; labels from outside the cycle count too.") for c in shown)
    assert not [c for c in shown if "None" in c]


def test_page_counts_only_this_cycles_labels(
    run_db: Database, db_path: Path, claims_of: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for pks in claims_of.values():
        label_all(run_db, pks, "imported")
    create(run_db, size=20, reviewers=["ann", "bob", "cid"], overlap=0.0, include_labeled=True)
    at = page(db_path, monkeypatch)
    table = at.dataframe[0].value
    assert list(table["Claims finished"]) == ["0 / 40"] and list(table["Done"]) == [0.0]
    assert list(table["Labeled outside"]) == [40]
    assert {m.label: m.value for m in at.metric}["Claims finished"] == "0 / 40"
    assert "Already labeled outside this cycle: 40 claims (not counted above)" in [
        c.value for c in at.caption
    ]
    assert list(at.dataframe[1].value["Labeled"]) == [0, 0, 0]


def test_page_judge_run_defaults_to_the_imported_run(
    run_db: Database, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.write(run_db):
        store.run_id(run_db, "lab", "broken", origin="judge-lab")
    at = page(db_path, monkeypatch)
    run = at.selectbox(key="cycle_run")
    assert run.options == [RUN] and run.value == RUN


def test_page_marks_holdout_answers(run_db: Database, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = page(db_path, monkeypatch)
    assert {m.label: m.value for m in at.metric}["Reserved answers"] == "0"
    at.text_area(key="holdout_ids").input("a01\n  a02 \n\na01\n")
    click(at, "Reserve for holdout cycles")
    assert not at.exception
    assert [s.value for s in at.success] == ["Reservation updated."]
    assert "2 answers reserved for holdout cycles" in texts(at)
    assert {m.label: m.value for m in at.metric}["Reserved answers"] == "2"
    assert at.text_area(key="holdout_ids").value == ""
    assert cycles.holdout_answers(run_db) == ["a01", "a02"]

    at.text_area(key="holdout_ids").input("a02\nnope")
    click(at, "Clear the reservation")
    assert [e.value for e in at.error] == ["Nothing changed."]
    assert "unknown answer id(s): nope" in texts(at)
    assert at.text_area(key="holdout_ids").value == "a02\nnope"  # kept, to fix
    at.text_area(key="holdout_ids").input("a02")
    click(at, "Clear the reservation")
    assert "1 answer no longer reserved" in texts(at)
    assert cycles.holdout_answers(run_db) == ["a01"]


def test_snapshot_leaves_a_claim_marked_unclear_unresolved(
    run_db: Database, claims_of: dict[str, list[int]]
) -> None:
    cycle = create(run_db, size=15, reviewers=[])
    first = claims_of[cycle.answers[0]][0]
    store.record_label(
        run_db, claim=first, reviewer="ann", kind="blind", verdict="SUPPORTED", cycle_id=cycle.id
    )
    store.record_label(run_db, claim=first, reviewer="bob", kind="unclear", cycle_id=cycle.id)
    snap = cycles.close_cycle(run_db, "c1", force=True).snapshot
    assert snap is not None
    assert snap["counts"]["reviewers_disagree"] == 1
    assert snap["counts"]["agree"] + snap["counts"]["disagree"] == 0


def test_page_reassigns_open_work_and_shows_names_visibly(
    run_db: Database, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = create(run_db, name="wk", reviewers=["ann", "bob"], overlap=0.0)
    # A name stored before cycle names were checked (`create_cycle` refuses it now).
    with store.write(run_db):
        run_db.execute(
            "UPDATE cycles SET name = :name WHERE id = :id", {"name": "wk \u202eeman", "id": made.id}
        )
    anns = cycles.queue(run_db, made.id, "ann")
    at = page(db_path, monkeypatch)
    assert not at.exception
    # A right-to-left override in the name is shown as a marker, never applied.
    assert list(at.dataframe[0].value["Name"]) == ["wk <U+202E>eman"]
    assert any(t.startswith("wk <U+202E>eman · judge@v1") for t in texts(at))
    at.selectbox(key="reassign_from").select("ann")
    at.text_input(key="reassign_to").input("BOB")
    at = next(b for b in at.button if b.label == "Reassign").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Work reassigned."]
    assert f"{len(anns)} answers moved from ann to bob" in texts(at)
    assert cycles.queue(run_db, made.id, "ann") == []
    history = at.dataframe[-1].value
    assert list(history["From"]) == ["ann"] and list(history["To"]) == ["bob"]
    assert list(history["By"]) == ["lead"]


def test_page_shows_reused_labels_as_done(
    run_db: Database, db_path: Path, claims_of: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    earlier = create(run_db, name="earlier", size=15, reviewers=["ann"])
    for aid in earlier.answers[:7]:
        label_all(run_db, claims_of[aid], "ann", earlier.id)
    later = create(run_db, name="later", size=15, reviewers=["ann"], include_labeled=True)
    reused = 2 * len(set(later.answers) & set(earlier.answers[:7]))
    assert reused  # seed 1 draws some of the same answers
    at = page(db_path, monkeypatch)
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["Name"]) == ["later", "earlier"]
    assert list(table["Claims finished"]) == [f"{reused} / 30 ({reused} reused)", "14 / 30"]
    assert list(table["Labeled outside"]) == [0, 0]
    at.selectbox(key="cycle_detail").set_value("later").run()
    assert (
        f"Of these, {reused} reused from other cycles or imports: the reviewers' own labels, given "
        "before this cycle, count as done" in [c.value for c in at.caption]
    )
    per = at.dataframe[1].value
    assert list(per["Labeled"]) == [reused] and list(per["Reused"]) == [reused]
    assert list(per["Answers committed"]) == ["0 / 15"]  # labeled directly, never committed


def test_page_creates_a_cycle_requiring_evidence_and_counts_what_lacks_it(
    run_db: Database, db_path: Path, claims_of: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    at = page(db_path, monkeypatch)
    at.text_input(key="cycle_name").input("sourced")
    at.text_input(key="cycle_reviewers").input("ann")
    at.checkbox(key="cycle_require_evidence").check()
    click(at, "Create cycle")
    assert not at.exception
    made = cycles.get_cycle(run_db, "sourced")
    assert made.require_evidence
    first, second = made.answers[:2]
    label_all(run_db, claims_of[first], "ann", made.id)  # SUPPORTED, no evidence
    label_all(run_db, claims_of[second], "ann", made.id, verdict="CONTRADICTED")
    at.run()
    assert "sourced" in next(t for t in texts(at) if "evidence required for SUPPORTED" in t)
    per = at.dataframe[1].value
    assert list(per["SUPPORTED without evidence"]) == [len(claims_of[first])]
