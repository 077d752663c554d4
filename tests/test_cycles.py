from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from sqlite_utils import Database
from streamlit.testing.v1 import AppTest

from calibration import cli, cycles, store
from calibration.errors import ConflictError, InputError, NotFoundError

ROOT = Path(__file__).resolve().parents[1]
WICE = ROOT / "data" / "wice"
RUN = "judge@v1"


# ---------------------------------------------------------------- small data made here


def add_answer(db: Database, run_id: int, answer_id: str, verdicts: list[str],
               category: str | None = None) -> list[int]:
    """One judged answer with one claim per verdict; returns the claim keys."""
    db.execute(
        "INSERT INTO answers (id, question, answer, category, content_hash, imported_at) "
        "VALUES (?, 'q', 'a', ?, ?, ?)", [answer_id, category, answer_id, store.now()])
    pks = []
    for i, verdict in enumerate(verdicts):
        cur = db.execute("INSERT INTO claims (answer_id, claim_id, position, text) VALUES (?,?,?,?)",
                         [answer_id, f"c{i + 1}", i, f"claim {i + 1}"])
        db.execute("INSERT INTO judge_verdicts (run_id, claim_pk, verdict) VALUES (?,?,?)",
                   [run_id, cur.lastrowid, verdict])
        pks.append(cur.lastrowid)
    return pks


def build_run(db: Database) -> dict[str, list[int]]:
    """Run judge@v1 over 40 two-claim answers a00..a39 in categories cat-a (20), cat-b (12),
    cat-c (8); a00..a09 hold one UNSUPPORTED verdict (failing), the rest are all SUPPORTED."""
    with store.write(db):
        run_id = db.execute("INSERT INTO judge_runs (judge_model, prompt_version, created_at) "
                            "VALUES ('judge', 'v1', ?)", [store.now()]).lastrowid
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
    cycle = create(run_db, size=20, seed=7, strategy="random", reviewers=["ann", "bob"],
                   created_by="lead")
    assert (cycle.name, cycle.judge_run, cycle.strategy, cycle.seed, cycle.size, cycle.status,
            cycle.created_by) == ("c1", RUN, "random", 7, 20, "open", "lead")
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


def test_failures_first_cycle_puts_failing_answers_first(run_db: Database) -> None:
    cycle = create(run_db, size=20, strategy="failures-first")
    items = cycles.cycle_answers(run_db, cycle.id)
    failing = {f"a{i:02d}" for i in range(10)}
    assert {i.answer_id for i in items[:10]} == failing  # all 10 failing: n_F = ceil(0.5 * 20)
    assert [i.inclusion_prob for i in items] == pytest.approx([1.0] * 10 + [10 / 30] * 10)
    # Over the pool (10 failing answers, 30 passing) the recorded pi sum to n.
    pi_failing, pi_passing = items[0].inclusion_prob, items[-1].inclusion_prob
    assert 10 * pi_failing + 30 * pi_passing == pytest.approx(cycle.size)


# ---------------------------------------------------------------- eligibility


def test_answers_with_every_claim_labeled_are_excluded(run_db: Database,
                                                       claims_of: dict[str, list[int]]) -> None:
    for i in range(8):  # a00..a07 fully labeled by a reviewer
        for pk in claims_of[f"a{i:02d}"]:
            store.record_label(run_db, claim=pk, reviewer="ann", kind="blind", verdict="SUPPORTED")
    for pk in claims_of["a08"]:  # a08 fully adjudicated
        store.adjudicate(run_db, claim=pk, adjudicator="lead", verdict="SUPPORTED")
    store.record_label(run_db, claim=claims_of["a09"][0], reviewer="ann", kind="blind",
                       verdict="SUPPORTED")  # a09 half labeled: still needs work
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
def test_overlap_share_and_no_answer_twice_to_one_reviewer(run_db: Database, overlap: float,
                                                           doubled: int) -> None:
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
    cycle = create(run_db, reviewers=["ann", " ann ", ""], overlap=0.2)
    assert cycle.reviewers == ("ann",) and cycle.overlap == 0
    assert any("two reviewers" in w for w in cycle.warnings)
    assert cycles.queue(run_db, cycle.id, "ann") == list(cycle.answers)


def test_open_cycle_queue_is_every_answer_for_anyone(run_db: Database) -> None:
    open_cycle = create(run_db, name="open", reviewers=[])
    assigned = create(run_db, name="assigned", reviewers=["ann", "bob"])
    assert open_cycle.is_open_to_all and open_cycle.overlap == 0
    assert cycles.queue(run_db, open_cycle.id, "zoe") == list(open_cycle.answers)
    assert [c.name for c in cycles.open_cycles_for(run_db, "zoe")] == ["open"]
    assert [c.name for c in cycles.open_cycles_for(run_db, "ann")] == ["open", "assigned"]
    cycles.close_cycle(run_db, "open")
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
    assert len(err.value.problems) == 4
    for pks in claims_of.values():
        for pk in pks:
            store.record_label(run_db, claim=pk, reviewer="ann", kind="blind", verdict="SUPPORTED")
    with pytest.raises(InputError, match="include-labeled"):
        create(run_db, name="empty")
    with pytest.raises(NotFoundError):
        cycles.get_cycle(run_db, "missing")


# ---------------------------------------------------------------- progress and closing


def test_progress_counts_claims_overall_and_per_reviewer(run_db: Database,
                                                        claims_of: dict[str, list[int]]) -> None:
    cycle = create(run_db, size=20, reviewers=["ann", "bob"], overlap=0.2)
    ann = cycles.queue(run_db, cycle.id, "ann")
    for pk in claims_of[ann[0]] + claims_of[ann[1]][:1]:
        store.record_label(run_db, claim=pk, reviewer="ann", kind="blind", verdict="SUPPORTED")
    store.record_label(run_db, claim=claims_of[ann[2]][0], reviewer="ann", kind="skip")
    prog = cycles.progress(run_db, cycle.id)
    assert (prog.labeled, prog.total) == (3, 40)
    per = {r.reviewer: (r.labeled, r.total) for r in prog.reviewers}
    assert per == {"ann": (3, 2 * len(ann)), "bob": (0, 2 * (24 - len(ann)))}


def test_closing_freezes_a_snapshot(run_db: Database, claims_of: dict[str, list[int]]) -> None:
    cycle = create(run_db, size=15, reviewers=[])
    for aid in cycle.answers[:5]:
        for pk in claims_of[aid]:
            store.record_label(run_db, claim=pk, reviewer="ann", kind="blind", verdict="SUPPORTED")
    closed = cycles.close_cycle(run_db, "c1")
    assert closed.status == "closed" and closed.closed_at
    snap = closed.snapshot
    assert snap is not None and snap["progress"]["labeled"] == 10 and snap["progress"]["total"] == 30
    assert sum(snap["counts"].values()) == 30 and snap["counts"]["unlabeled"] == 20
    assert len(snap["claims"]) == 30
    assert snap["agreement"]["n_claims"] == 10
    # Later labels change nothing frozen; a cycle closes once.
    store.record_label(run_db, claim=claims_of[cycle.answers[9]][0], reviewer="bob", kind="blind",
                       verdict="CONTRADICTED")
    assert cycles.get_cycle(run_db, "c1").snapshot == snap
    with pytest.raises(ConflictError, match="already closed"):
        cycles.close_cycle(run_db, "c1")
    given = create(run_db, name="c2")
    assert cycles.close_cycle(run_db, "c2", {"note": "given"}).snapshot == {"note": "given"}
    assert given.status == "open"


def test_closing_with_no_labels_stores_counts_only(run_db: Database) -> None:
    create(run_db)
    snap = cycles.close_cycle(run_db, "c1").snapshot
    assert snap is not None and snap["agreement"] is None and "note" in snap


# ---------------------------------------------------------------- CLI on the real WiCE data


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_cycle_on_wice_gives_20_answers(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(db_path)
    assert run_cli(capsys, "--db", db, "import", str(WICE / "wice_judged_gpt4.jsonl"))[0] == 0
    rc, out, err = run_cli(capsys, "--db", db, "cycle", "create", "--name", "wice-1",
                           "--judge-run", "gpt-4-0613@wice-gpt4", "--seed", "5",
                           "--reviewers", "ann,bob")
    assert rc == 0, err
    rc, out, _ = run_cli(capsys, "--db", db, "cycle", "show", "wice-1", "--json")
    shown = json.loads(out)
    assert (shown["name"], shown["judge_run"], shown["strategy"], shown["seed"], shown["status"]) \
        == ("wice-1", "gpt-4-0613@wice-gpt4", "random", 5, "open")
    ids = {json.loads(line)["id"] for line in (WICE / "wice_judged_gpt4.jsonl").open()}
    assert len(shown["answers"]) == 20 and len(set(shown["answers"])) == 20
    assert set(shown["answers"]) <= ids
    assert [i["answer_id"] for i in shown["items"]] == shown["answers"]
    rc, out, _ = run_cli(capsys, "--db", db, "cycle", "list")
    assert rc == 0 and "wice-1" in out and "0/20" in out
    rc, out, _ = run_cli(capsys, "--db", db, "cycle", "close", "wice-1")
    assert rc == 0 and "closed" in out


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


def test_cli_holdout(run_db: Database, db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(db_path)
    rc, out, _ = run_cli(capsys, "--db", db, "holdout", "add", "a01", "a02")
    assert rc == 0 and out.startswith("2 answers")
    assert run_cli(capsys, "--db", db, "holdout", "list")[1].split() == ["a01", "a02"]
    assert run_cli(capsys, "--db", db, "holdout", "remove", "a02")[0] == 0
    rc, _, err = run_cli(capsys, "--db", db, "holdout", "add", "zz")
    assert rc == 1 and "unknown answer" in err


# ---------------------------------------------------------------- the Cycles page


def test_page_creates_a_cycle_and_lists_it(run_db: Database, db_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import ui

    monkeypatch.setenv("CALIBRATION_DB", str(db_path))
    at = AppTest.from_file(str(ROOT / "pages" / "cycles.py"), default_timeout=30)
    at.session_state[ui.REVIEWER_KEY] = "lead"
    at.run()
    assert not at.exception
    assert [i.value for i in at.info] == ["No cycles yet."]

    at.text_input(key="cycle_name").input("week 1")
    at.text_input(key="cycle_seed").input("9")
    at.text_input(key="cycle_reviewers").input("ann, bob")
    at.button[0].click().run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Cycle created."]
    table = at.dataframe[0].value
    assert list(table["Name"]) == ["week 1"] and list(table["Claims labeled"]) == ["0 / 40"]
    assert cycles.get_cycle(run_db, "week 1").created_by == "lead"

    # A refused form shows the reason, and the list stays as it was.
    at.text_input(key="cycle_name").input("week 2")
    at.number_input(key="cycle_size").set_value(10)
    at.button[0].click().run()
    assert [e.value for e in at.error] == ["The cycle was not created."]
    assert any("outside 15-30" in t.value for t in at.text)
    assert len(at.dataframe[0].value) == 1

    at.checkbox(key="cycle_force").check()
    at.button[0].click().run()
    assert [w.value for w in at.warning] == ["Cycle created, with warnings."]
    assert any("Wilson" in t.value for t in at.text)
    assert list(at.dataframe[0].value["Name"]) == ["week 2", "week 1"]  # newest first
    assert at.selectbox(key="cycle_detail").value == "week 2"  # the new cycle's details

    at.checkbox(key="cycle_close_confirm").check().run()
    at.button(key="cycle_close").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Cycle closed; its figures are frozen."]
    assert list(at.dataframe[0].value["Status"]) == ["closed", "open"]
