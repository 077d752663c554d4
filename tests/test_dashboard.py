from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from scipy import stats
from streamlit.testing.v1 import AppTest

from calibration import agreement, assessment, cycles, dashboard, export, fmt, store
from calibration.fmt import plural
from calibration.importing import import_answers
from calibration.report import BOOTSTRAP
from calibration.store import Database
from calibration.store.claims import json_ints
from tests.final_label_oracle import FinalLabels, resolve_final_labels
from tests.records import Claim, PairedClaim, compare_of, hh_of, report_of, stats_input, table_of

from .conftest import DEMO, ROOT

PAGE = str(ROOT / "pages" / "dashboard.py")
GPT4, GPT35 = "gpt-4-0613@wice-gpt4", "gpt-3.5-turbo-0613@wice-gpt35"
DEMO_RUN = "demo-judge@grounding-v1"
EVIL = "**bold** $x^2$ <b>html</b> :red[red] [link](http://x)"


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    # The page caches per process; a test must never see another test's database.
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def page_db(db_url: str | Path, monkeypatch: pytest.MonkeyPatch) -> str | Path:
    """The pages' store (the app finds it in $CALIBRATION_DB): the test's database, on its backend."""
    monkeypatch.setenv("CALIBRATION_DB", str(db_url))
    return db_url


def render(**choices: object) -> AppTest:
    from calibration_app import signin

    # Through the app's navigation: the page links to the Cycles and Judge lab pages.
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    # Signed in, as the app's pages may ask; with no lead list configured any name is a lead.
    at.session_state[signin.REVIEWER_KEY] = "lead"
    at.switch_page("pages/dashboard.py").run()
    for key, value in choices.items():
        at.selectbox(key=key).set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


@pytest.fixture
def cycle_db(demo_db: Database) -> Database:
    """The demo run, one random cycle over all five answers, labels by two reviewers."""
    db = demo_db
    cyc = cycles.create_cycle(db, name="week 1", judge_run=DEMO_RUN, size=5, seed=1, force=True)
    run = store.find_judge_run(db, DEMO_RUN).id

    def lab(answer: str, claim: str, reviewer: str, verdict: str, **kw: object) -> None:
        store.record_label(
            db,
            claim=store.claim_pk(db, answer, claim),
            reviewer=reviewer,
            kind="blind",
            verdict=verdict,
            cycle_id=cyc.id,
            **kw,
        )  # type: ignore[arg-type]

    lab("Q1", "c1", "ann", "SUPPORTED", evidence=["S1"])
    lab("Q1", "c2", "ann", "UNSUPPORTED", note=EVIL)
    store.record_label(db, claim=store.claim_pk(db, "Q1", "c2"), reviewer="ann", kind="keep")
    lab("Q2", "c1", "ann", "UNSUPPORTED")
    store.record_label(
        db, claim=store.claim_pk(db, "Q2", "c1"), reviewer="ann", kind="judge_right", judge_run_id=run
    )  # a slip
    lab("Q2", "c2", "ann", "CONTRADICTED")
    lab("Q2", "c2", "bob", "CONTRADICTED")
    lab("Q3", "c1", "ann", "SUPPORTED")
    lab("Q3", "c1", "bob", "UNSUPPORTED")  # disputed, left out
    lab("Q4", "c1", "bob", "SUPPORTED")
    return db


# ---------------------------------------------------------------- the page (AppTest)


def test_page_renders_on_an_empty_database(page_db: str | Path) -> None:
    at = render()
    assert [i.value for i in at.info] and not at.error


def test_page_renders_on_one_cycle(cycle_db: Database, page_db: str | Path) -> None:
    at = render(**{f"dash_scope_{DEMO_RUN}": 1})  # the first cycle of the run
    assert len([m for m in at.markdown if m.value.startswith("### :")]) == 1  # one verdict word
    # Several reviewers on some claims: the disputed claim is in the figures, once per reviewer.
    said = [t for t in texts(at) if "unresolved claim" in t]
    assert said and all(not t.startswith("Left out of the figures: 1 unresolved claim") for t in said)
    assert any(
        "1 unresolved claim (reviewers disagree or marked it unclear) counted with each "
        "reviewer's verdict" in t
        for t in said
    )
    assert not any("1 claims" in t for t in texts(at))
    # Untrusted text (the note) is never handed to a markdown element.
    markdown = [m.value for m in (*at.markdown, *at.caption, *at.error, *at.warning, *at.success, *at.info)]
    assert not any("bold" in m or "x^2" in m for m in markdown)
    assert [e.label for e in at.expander]


def test_page_on_wice_gpt4_says_revise_because_the_judge_is_lenient(
    wice_db: Database, page_db: str | Path
) -> None:
    at = render(dash_run=GPT4)
    assert [m.value for m in at.markdown if m.value.startswith("### :")] == ["### :red[revise]"]
    assert any(t.startswith("• judge is lenient") for t in texts(at))
    assert "Claims behind: judge is lenient (19)" in [c.value for c in at.caption]
    how = next(e for e in at.expander if e.label.startswith("How this is computed"))
    table = next(df.value for df in how.dataframe if len(df.value) == 19)
    assert len(table) == 19 and all(table["claim"]) and set(table["judge"]) == {"SUPPORTED"}
    assert any("19 times" in t and "4 times" in t for t in texts(at))


def test_page_says_what_a_framework_golden_set_holds(wice_db: Database, page_db: str | Path) -> None:
    at = render(dash_run=GPT4, dash_export_format="ragas")
    assert any(c.value.startswith("100 items, 78 of them negatives") for c in at.caption)
    assert any("100 of 100 items hold a claim without evidence" in w.value for w in at.warning)


def test_page_keeps_the_run_chosen_across_pages(wice_db: Database, page_db: str | Path) -> None:
    at = render()
    assert at.selectbox(key="dash_run").value == GPT35  # the newest labeled import: nobody reviewed yet
    at.selectbox(key="dash_run").set_value(GPT4).run()
    at.switch_page("pages/cycles.py").run()
    at.switch_page("pages/dashboard.py").run()
    assert not at.exception
    assert at.selectbox(key="dash_run").value == GPT4


def test_page_compares_the_two_wice_runs(wice_db: Database, page_db: str | Path) -> None:
    at = render(dash_run=GPT4, **{f"dash_compare_{GPT4}": 1})  # the other run
    assert GPT4 in texts(at) and GPT35 in texts(at)
    assert any("exact McNemar p < 0.001" in t and "better beyond chance" in t for t in texts(at))


def test_page_shows_a_closed_cycle_in_the_trend(cycle_db: Database, page_db: str | Path) -> None:
    cycles.close_cycle(cycle_db, "week 1", force=True)
    at = render()
    trend = [df.value for df in at.dataframe if "cycle #" in df.value.columns]
    assert len(trend) == 1 and list(trend[0]["cycle"]) == ["week 1"]


# ---------------------------------------------------------------- the domain


def test_wice_gpt4_flag_reasons_direction_and_claims(wice_db: Database) -> None:
    d = dashboard.build(wice_db, run="wice-gpt4", bootstrap=0)
    assert d.report.flag.status == "revise"
    codes = [r.code for r in d.reasons]
    assert "judge_lenient" in codes
    lenient = next(r for r in d.reasons if r.code == "judge_lenient")
    assert len(lenient.claim_keys) == 19
    assert all(d.verdicts[k][1] == "SUPPORTED" != d.verdicts[k][0] for k in lenient.claim_keys)
    assert "SUPPORTED where reviewers did not: 19 times" in d.direction_text
    assert "4 times" in d.direction_text
    assert "misses 19.0%, invents 4.0% of claims: +15.0 points, 95% CI " in d.direction_text
    assert "It misses hallucinations more often than it invents them." in d.direction_text
    assert len(d.disagreements) == 23
    row = d.disagreements[0]
    assert row.claim and row.rationale and row.chunks.startswith("[c")


def test_comparison_of_the_two_wice_runs(wice_db: Database) -> None:
    cmp = dashboard.compare(wice_db, "wice-gpt4", "wice-gpt35")
    assert cmp is not None
    r = cmp.result
    assert r.n_claims == 100
    assert r.agreement_a.value == pytest.approx(0.77) and r.agreement_b.value == pytest.approx(0.39)
    assert r.kappa_a.value is not None and r.kappa_b.value is not None and r.kappa_a.value > r.kappa_b.value
    b, c = len(r.only_a_right), len(r.only_b_right)
    assert (b, c) == (41, 3)
    # The paired exact McNemar is the two-sided binomial test on the discordant pairs.
    assert r.mcnemar.p_two_sided == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue)
    assert "better beyond chance" in cmp.text
    d = dashboard.build(wice_db, run="wice-gpt4", compare_with="wice-gpt35", bootstrap=0)
    assert d.comparison is not None and d.comparison.result.n_claims == 100


def test_cycle_scope_slips_human_human_and_unresolved(cycle_db: Database) -> None:
    d = dashboard.build(cycle_db, run=DEMO_RUN, cycle="week 1", bootstrap=0)
    # Two reviewers disagree on Q3/c1: it is unresolved, and counted with each reviewer's verdict.
    assert d.report.n_claims == 6 and d.report.unresolved_claims == ("Q3/c1",)
    assert d.report.basis == "per_reviewer" and d.report.final_label_view["n_claims"] == 5
    assert not d.oversampled  # a random cycle: equal inclusion probabilities
    assert [f.label for f in dashboard.headline(d)] == ["Agreement", "Cohen's kappa", "Gwet's AC1", "PABAK"]
    ann = next(r for r in d.reviewers if r.reviewer == "ann")
    assert (ann.labeled, ann.kept, ann.judge_right, ann.slips) == (5, 1, 1, 1)
    assert d.human_human is not None and d.human_human.n_claims == 2
    assert "2 claims labeled by several reviewers" in dashboard.human_human_text(d)
    assert {c.category: c.n_claims for c in d.categories} == {
        "single-fact": 2,
        "rule-application": 2,
        "multi-part": 1,
    }
    q1c2 = d.details["Q1/c2"]
    assert q1c2.notes == f"ann: {EVIL}" and q1c2.human == "UNSUPPORTED" and q1c2.judge == "SUPPORTED"


def test_an_oversampled_cycle_shows_the_reweighted_agreement(wice_db: Database) -> None:
    cycles.create_cycle(
        wice_db,
        name="ff",
        judge_run="wice-gpt4",
        size=30,
        seed=2,
        strategy="failures-first",
        include_labeled=True,
    )
    d = dashboard.build(wice_db, run="wice-gpt4", cycle="ff", bootstrap=200)
    assert d.oversampled and d.report.weighted is not None
    assert dashboard.headline(d)[-1].label == "Re-weighted agreement"


def test_trend_lists_closed_cycles_in_closing_order(cycle_db: Database) -> None:
    cycles.create_cycle(
        cycle_db, name="week 2", judge_run=DEMO_RUN, size=5, seed=2, force=True, include_labeled=True
    )
    cycles.close_cycle(cycle_db, "week 2", force=True)
    cycles.close_cycle(cycle_db, "week 1", force=True)
    points = dashboard.build(cycle_db, run=DEMO_RUN, bootstrap=0).trend
    assert [(p.number, p.cycle) for p in points] == [(1, "week 2"), (2, "week 1")]
    snap = json.loads(cycle_db.execute("SELECT snapshot FROM cycles WHERE name = 'week 1'").fetchone()[0])
    # Trend shows the figure and interval the closed cycle's own header shows: one reading.
    header = dashboard.decision(assessment.of_report(snap["agreement"], scope="week 1"))
    estimated = snap["agreement"]["agreement"]["estimated"]
    assert (points[1].agreement, points[1].agreement_low, points[1].agreement_high) == (
        estimated["value"],
        estimated["ci_low"],
        estimated["ci_high"],
    )
    (row,) = [
        r
        for r in dashboard.trend_rows(dashboard.build(cycle_db, run=DEMO_RUN, bootstrap=0))
        if r["cycle"] == "week 1"
    ]
    assert (row["agreement"], row["agreement 95% CI"]) == (header.figure, header.interval)


def test_no_labels_gives_an_inconclusive_flag(demo_db: Database) -> None:
    d = dashboard.build(demo_db, run=DEMO_RUN)
    assert d.report.flag.status == "inconclusive" and d.reasons[0].code == "no_data"
    assert d.n_unlabeled == 9 and not d.disagreements and d.trend == ()
    assert "Label claims" in d.sample_size_text


def test_fingerprint_moves_with_labels_closes_and_thresholds(cycle_db: Database) -> None:
    before = dashboard.fingerprint(cycle_db)
    store.record_label(cycle_db, claim=store.claim_pk(cycle_db, "Q5", "c1"), reviewer="ann", kind="skip")
    after_label = dashboard.fingerprint(cycle_db)
    cycles.close_cycle(cycle_db, "week 1", force=True)
    after_close = dashboard.fingerprint(cycle_db)
    store.save_thresholds(cycle_db, agreement_target=0.9)
    assert len({before, after_label, after_close, dashboard.fingerprint(cycle_db)}) == 4


def test_ids_with_slashes_still_find_their_details(fresh_db: Database, tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text(
        json.dumps(
            {
                "id": "kb/doc/1",
                "question": "q",
                "answer": "a",
                "judge_model": "j",
                "judge_prompt_version": "v",
                "chunks": [{"id": "k", "text": "t"}],
                "claims": [{"id": "c/1", "claim": "x", "verdict": "SUPPORTED"}],
            }
        )
        + "\n"
    )
    import_answers(fresh_db, src)
    store.record_label(
        fresh_db,
        claim=store.claim_pk(fresh_db, "kb/doc/1", "c/1"),
        reviewer="r",
        kind="blind",
        verdict="UNSUPPORTED",
    )
    d = dashboard.build(fresh_db, run="j@v", bootstrap=0)
    assert [c.claim for c in d.disagreements] == ["x"]


def test_demo_import_keeps_working(fresh_db: Database) -> None:
    import_answers(fresh_db, DEMO)
    assert dashboard.run_names(fresh_db) == [DEMO_RUN] and dashboard.cycle_names(fresh_db, DEMO_RUN) == []


# ---------------------------------------------------------------- the columns behind it
# The dashboard reads the store as arrays and resolves final labels with array operations; the
# oracles here are the per-record statistics (resolve_final_labels and friends) and
# the reviewer table's SQL.

RUN_A, RUN_B = "mix@a", "mix@b"


@pytest.fixture
def mixed_db(fresh_db: Database, tmp_path: Path) -> Database:
    """Answers of 1-4 claims judged by two runs (B on most of them), and every kind of label.

    Agreeing and disagreeing reviewers, two to four on a claim, adjudications of disputes, of a
    claim nobody labeled and against a unanimous label, skips, unclear, keep, judge_right, slips,
    claims left unlabeled; and an oversampled cycle of run A.
    """
    import random

    db = fresh_db
    rng = random.Random(7)
    verdicts = ("SUPPORTED", "CONTRADICTED", "UNSUPPORTED")
    for run, answers in ((RUN_A, range(24)), (RUN_B, range(20))):
        model, version = run.split("@")
        src = tmp_path / f"{version}.jsonl"
        with src.open("w", encoding="utf-8") as fh:
            for a in answers:
                r = random.Random(a)  # the same claims for both runs, different verdicts
                fh.write(
                    json.dumps(
                        {
                            "id": f"q/{a:02d}",
                            "question": "q",
                            "answer": "a",
                            "category": (None, "numeric", "refusal", "single-fact")[a % 4],
                            "judge_model": model,
                            "judge_prompt_version": version,
                            "chunks": [{"id": "S1", "text": "t"}],
                            "claims": [
                                {
                                    "id": f"c{i}",
                                    "claim": f"claim {i}",
                                    "verdict": verdicts[
                                        (r.randrange(3) + (run == RUN_B) * rng.randrange(2)) % 3
                                    ],
                                }
                                for i in range(1, 2 + a % 4)
                            ],
                        }
                    )
                    + "\n"
                )
        import_answers(db, src)
    run_a = store.find_judge_run(db, RUN_A).id
    pks = [pk for (pk,) in db.execute("SELECT id FROM claims ORDER BY id")]
    for n, pk in enumerate(pks):
        if n % 11 == 10:  # nobody labels it; every other one of those the lead adjudicates
            if n % 2:
                store.adjudicate(db, claim=pk, adjudicator="lead", verdict=verdicts[n % 3])
            continue
        reviewers = ["ann", "bob", "cy", "dee"][: 1 + n % 4]
        truth = verdicts[rng.randrange(3)]
        for rev in reviewers:
            kind = rng.random()
            if kind < 0.08:
                store.record_label(db, claim=pk, reviewer=rev, kind="skip")
            elif kind < 0.14:
                store.record_label(db, claim=pk, reviewer=rev, kind="unclear")
            else:
                said = truth if rng.random() < 0.75 else verdicts[rng.randrange(3)]
                store.record_label(db, claim=pk, reviewer=rev, kind="blind", verdict=said)
                if rng.random() < 0.3:
                    store.record_label(db, claim=pk, reviewer=rev, kind="judge_right", judge_run_id=run_a)
                elif rng.random() < 0.3:
                    store.record_label(db, claim=pk, reviewer=rev, kind="keep")
        if n % 5 == 0:  # disputed and unanimous claims alike
            store.adjudicate(db, claim=pk, adjudicator="lead", verdict=verdicts[n % 3])
    cycles.create_cycle(
        db,
        name="ff",
        judge_run=RUN_A,
        size=10,
        seed=3,
        strategy="failures-first",
        include_labeled=True,
        force=True,
    )
    return db


def _oracle(
    db: Database, run_id: int, cycle_id: int | None
) -> tuple[FinalLabels, list[tuple[str, str, str]], int]:
    """`resolve_final_labels` on the raw rows; the rows (claim order, then reviewer); the
    number of judged claims in scope."""
    scope = (
        "JOIN cycle_answers ca ON ca.answer_id = c.answer_id AND ca.cycle_id = :cycle"
        if cycle_id is not None
        else ""
    )
    order = "ca.position, c.position" if cycle_id is not None else "c.id"
    params = {"run": run_id, "cycle": cycle_id}
    labels = db.execute(
        f"""SELECT c.answer_id || '/' || c.claim_id, h.reviewer, h.final_verdict
            FROM human_labels h JOIN claims c ON c.id = h.claim_pk {scope}
            JOIN judge_verdicts v ON v.claim_pk = c.id AND v.run_id = :run
            WHERE h.status = 'labeled' AND h.final_verdict IS NOT NULL
            ORDER BY {order}, h.reviewer""",
        params,
    ).fetchall()
    adjudicated = dict(
        db.execute(
            f"""SELECT c.answer_id || '/' || c.claim_id, d.verdict FROM adjudications d
            JOIN claims c ON c.id = d.claim_pk {scope}
            JOIN judge_verdicts v ON v.claim_pk = c.id AND v.run_id = :run""",
            params,
        ).fetchall()
    )
    unclear = [
        k
        for (k,) in db.execute(
            f"""SELECT c.answer_id || '/' || c.claim_id FROM human_labels h
            JOIN claims c ON c.id = h.claim_pk {scope}
            JOIN judge_verdicts v ON v.claim_pk = c.id AND v.run_id = :run
            WHERE h.status = 'unclear'""",
            params,
        ).fetchall()
    ]
    judged = db.execute(
        f"SELECT count(*) FROM judge_verdicts v JOIN claims c ON c.id = v.claim_pk {scope} "
        "WHERE v.run_id = :run",
        params,
    ).fetchone()[0]
    return resolve_final_labels(labels, adjudicated, unclear), labels, judged


def _claim_order(db: Database):
    pos = {
        k: i
        for i, (k,) in enumerate(
            db.execute("SELECT answer_id || '/' || claim_id FROM claims ORDER BY id").fetchall()
        )
    }
    return pos.__getitem__


@pytest.mark.parametrize("scope", [None, "ff"])
def test_final_labels_from_the_store_equal_resolve_final_labels(
    mixed_db: Database, scope: str | None
) -> None:
    db = mixed_db
    run = store.find_judge_run(db, RUN_A).id
    cycle_id = None if scope is None else cycles.get_cycle(db, scope).id
    cols = store.stats_columns(db, run, cycle_id, reviewer_labels="all")
    expected, labels, judged = _oracle(db, run, cycle_id)
    final = {k: agreement.LABELS[h] for k, h in zip(cols.keys, cols.human.tolist(), strict=True)}
    assert final == expected.labels
    assert set(cols.unresolved) == set(expected.unresolved)
    assert cols.unlabeled == judged - len(expected.labels) - len(expected.unresolved)
    assert cols.reviewer_labels == labels
    shared = store.stats_columns(db, run, cycle_id).reviewer_labels
    several = {k for k, n in Counter(k for k, _, _ in labels).items() if n > 1}
    assert shared == [lab for lab in labels if lab[0] in several]
    if scope is None:
        # The fixture holds every case the rule distinguishes.
        assert cols.unresolved and cols.unlabeled
        assert list(cols.unresolved) == sorted(cols.unresolved, key=_claim_order(db))  # claim order
        adjudicated = {pk for (pk,) in db.execute("SELECT claim_pk FROM adjudications").fetchall()}
        labeled = {
            pk
            for (pk,) in db.execute("SELECT claim_pk FROM human_labels WHERE status = 'labeled'").fetchall()
        }
        assert adjudicated - labeled  # adjudicated, nobody labeled
        assert db.execute("SELECT count(*) FROM human_labels WHERE status = 'skipped'").fetchone()[0]
        assert db.execute("SELECT count(*) FROM human_labels WHERE status = 'unclear'").fetchone()[0]
        assert db.execute("SELECT count(*) FROM human_labels WHERE slip = 1").fetchone()[0]
        assert np.bincount(cols.labels.claim).max() == 4
    else:
        assert cols.weight is not None and np.unique(cols.weight).size > 1
    # The per-record form says the same, in the same order.
    data = stats_input(db, run, cycle_id)
    assert [(it.claim_key, it.human) for it in data.items] == list(final.items())
    assert (data.unresolved, data.unlabeled) == (cols.unresolved, cols.unlabeled)
    assert data.reviewer_labels == labels


def reviewer_counts_by_sql(db: Database, run_id: int, cycle_id: int | None) -> list[tuple]:
    """Per reviewer, over labels with a verdict on the claims the run judged (within the cycle):
    (reviewer, labeled, reconciled, reconciled with blind != judge, keep, judge_right, slips)."""
    cycle_join = (
        "JOIN claims c ON c.id = h.claim_pk JOIN cycle_answers ca ON ca.answer_id = c.answer_id "
        "AND ca.cycle_id = :cycle"
        if cycle_id is not None
        else ""
    )
    rows = db.execute(
        f"""SELECT h.reviewer, count(*), count(h.reconciled),
                   count(CASE WHEN h.reconciled IS NOT NULL AND h.blind_verdict != v.verdict THEN 1 END),
                   count(CASE WHEN h.reconciled = 'keep' THEN 1 END),
                   count(CASE WHEN h.reconciled = 'judge_right' THEN 1 END), sum(h.slip)
            FROM human_labels h
            JOIN judge_verdicts v ON v.claim_pk = h.claim_pk AND v.run_id = :run
            {cycle_join}
            WHERE h.status = 'labeled'
            GROUP BY h.reviewer ORDER BY h.reviewer""",
        {"run": run_id, "cycle": cycle_id},
    ).fetchall()
    return [(reviewer, labeled, *(x or 0 for x in rest)) for reviewer, labeled, *rest in rows]


@pytest.mark.parametrize("scope", [None, "ff"])
def test_reviewer_rows_from_the_columns_equal_the_sql(mixed_db: Database, scope: str | None) -> None:
    run = store.find_judge_run(mixed_db, RUN_A).id
    cycle_id = None if scope is None else cycles.get_cycle(mixed_db, scope).id
    cols = store.stats_columns(mixed_db, run, cycle_id)
    rows = dashboard.reviewer_rows_of(cols.labels)
    expected = reviewer_counts_by_sql(mixed_db, run, cycle_id)
    assert [
        (r.reviewer, r.labeled, r.reviewed, r.disagreed_blind, r.kept, r.judge_right, r.slips) for r in rows
    ] == expected
    assert all(r.slip_rate == (r.slips / r.reviewed if r.reviewed else None) for r in rows)
    assert [r.reviewer for r in rows] == ["ann", "bob", "cy", "dee"] and any(r.slips for r in rows)


_DESIGN_KEYS = {
    "flag",
    "human_ceiling",
    "pipeline",
    "sample_size",
    "scope",
    "thresholds_used",
    "human_human",
    "human_human_post_reveal",
}
_DESIGN_SUBKEYS = {"rule", "estimated", "prob_at_least_target", "prob_sentence"}


def _raw_part(report: dict) -> dict:
    return {
        k: ({kk: vv for kk, vv in v.items() if kk not in _DESIGN_SUBKEYS} if isinstance(v, dict) else v)
        for k, v in report.items()
        if k not in _DESIGN_KEYS
    }


def test_counts_on_the_per_reviewer_basis_count_claims_and_name_the_verdicts(mixed_db: Database) -> None:
    d = dashboard.build(mixed_db, run=RUN_A, bootstrap=0)
    r = d.report
    assert r.basis == "per_reviewer"
    counts = d.assessment.counts
    verdicts = int(np.asarray(r.confusion).sum())
    assert verdicts > r.n_claims  # several reviewers on some claims: the matrix counts verdicts
    assert counts.disagreeing == len(r.disagreeing_claims) and counts.sealed == 0
    assert counts.verdicts == verdicts
    assert counts.sentence().startswith(
        f"On {r.n_claims:,} labeled claims: {counts.disagreeing:,} disagreeing"
    )
    assert f"{verdicts:,} verdicts in the matrix" in counts.sentence()


@pytest.mark.parametrize("scope", [None, "ff"])
def test_dashboard_figures_equal_the_per_record_statistics(mixed_db: Database, scope: str | None) -> None:
    db = mixed_db
    d = dashboard.build(db, run=RUN_A, cycle=scope, compare_with=RUN_B, bootstrap=300, seed=4)
    run_a, run_b = store.find_judge_run(db, RUN_A).id, store.find_judge_run(db, RUN_B).id
    cycle_id = None if scope is None else cycles.get_cycle(db, scope).id
    data = stats_input(db, run_a, cycle_id)
    items = data.items
    if not d.oversampled:
        items = [Claim(it.answer_id, it.claim_key, it.human, it.judge) for it in items]
    final_view = report_of(items, store.load_thresholds(db), bootstrap=0)
    hh = hh_of(data.reviewer_labels)
    ours = d.report.to_dict()
    # Several reviewers: the figures are over every reviewer's blind verdict, one record per (claim,
    # reviewer) in claim then reviewer order, the lead's verdict on adjudicated claims.
    assert ours["agreement"]["basis"] == "per_reviewer"
    table = store.claim_table(db, run_a, cycle_id)
    lab = table.labels
    rows = sorted(
        (int(c), int(r), int(b if b >= 0 else f))
        for c, r, b, f in zip(lab.claim, lab.reviewer, lab.blind, lab.final, strict=True)
        if max(b, f) >= 0
    )
    adjudicated = {c for c, s in enumerate(table.statuses()) if s == "adjudicated"}
    # An adjudicated claim nobody labeled is one record, with the lead's verdict.
    rows = sorted(rows + [(c, -1, -1) for c in adjudicated if c not in {c for c, _, _ in rows}])
    records = [
        Claim(
            table.answer_ids[table.answer[c]],
            f"{table.keys[c]}#{'lead' if r < 0 else lab.reviewers[r]}",
            agreement.LABELS[table.human[c] if c in adjudicated else v],
            agreement.LABELS[table.judge[c]],
            None if not d.oversampled or table.weight is None else float(table.weight[c]),
        )
        for c, r, v in rows
    ]
    report = report_of(records, store.load_thresholds(db), bootstrap=300, seed=4)
    theirs = {
        **report.to_dict(),
        "n_unresolved": len(data.unresolved),
        "unresolved_claims": list(data.unresolved),
    }

    def claim_lists(r: dict) -> tuple[list[str], list[str], list[str]]:
        once = [list(dict.fromkeys(k.split("#")[0] for k in r[key])) for key in ("disagreeing_claims",)]
        dirn = [
            list(dict.fromkeys(k.split("#")[0] for k in r["direction"][key]))
            for key in ("lenient_claims", "strict_claims")
        ]
        return once[0], dirn[0], dirn[1]

    def figures(r: dict) -> dict:
        out = _raw_part(r)
        for key in ("disagreeing_claims", "n_disagreeing", "n_claims", "n_labels", "agreement_final_label"):
            out.pop(key, None)
        out["agreement"] = {k: v for k, v in out["agreement"].items() if k != "basis"}
        out["direction"] = {k: v for k, v in out["direction"].items() if not k.endswith("_claims")}
        return out

    # The records know no design, labeling order or blind verdicts: the raw figures must match
    # exactly; the design-based ones (and the flag built on them) are checked in test_agreement.
    assert figures(ours) == figures(theirs)
    assert claim_lists(ours) == claim_lists(theirs)
    assert ours["n_labels"] == len(records) and ours["n_claims"] == len({c for c, _, _ in rows})
    # The unanimous view beside it is the final-label report.
    fl = ours["agreement_final_label"]
    assert fl["n_claims"] == final_view.n_claims
    assert fl["agreement"] == final_view.agreement.to_dict()
    assert fl["kappa"] == final_view.kappa.value
    post = {k: v for k, v in ours["human_human_post_reveal"].items() if k != "basis"}
    assert post == {k: v for k, v in hh.to_dict().items() if k != "basis"}
    assert d.report.unresolved_claims == data.unresolved
    # The claims a list shows carry the verdicts the figures count: every reviewer's, distinct.
    listed = {*d.report.disagreeing_claims, *(k for r in d.report.flag.reasons for k in r.claim_ids)}
    cells: dict[str, tuple[str, list[str]]] = {}
    for rec in records:
        key = rec.claim_key.rsplit("#", 1)[0]
        if key in listed:
            cells.setdefault(key, (rec.judge, []))[1].append(rec.human)
    assert d.verdicts == {k: (" / ".join(dict.fromkeys(hs)), j) for k, (j, hs) in cells.items()}
    # The paired comparison, as the records give it.
    judge_b = {it.claim_key: it.judge for it in stats_input(db, run_b, cycle_id).items}
    paired = [
        PairedClaim(it.answer_id, it.claim_key, it.human, it.judge, judge_b[it.claim_key])
        for it in data.items
        if it.claim_key in judge_b
    ]
    assert d.comparison is not None and d.comparison.result == compare_of(paired)
    assert 0 < d.comparison.result.n_claims < len(data.items) or scope is not None
    # Per category, the statistics of each category's table.
    category = dict(db.execute("SELECT id, category FROM answers").fetchall())
    for row in d.categories:
        mine = [it for it in data.items if category[it.answer_id] == row.category]
        table = table_of(
            [agreement.LABELS.index(it.human) for it in mine],
            [agreement.LABELS.index(it.judge) for it in mine],
        )
        assert row.n_claims == len(mine)
        assert (row.agreement, row.kappa) == (
            agreement.percent_agreement(table).value,
            agreement.cohens_kappa(table).value,
        )


def test_page_says_how_many_resamples_the_bootstrap_drew(wice_db: Database, page_db: str | Path) -> None:
    at = render(dash_run=GPT4)
    notes = [t for t in texts(at) if "answer bootstrap" in t]
    assert len(notes) == 2 and all(f"({BOOTSTRAP:,} resamples)" in t for t in notes)


@pytest.mark.parametrize("text", ["[1,null]", "[1,2.5]", '[1,"2"]', "[1,2e3]"])
def test_store_columns_refuse_what_is_not_an_integer(text: str) -> None:
    with pytest.raises(ValueError):
        json_ints(text)
    assert json_ints("[]").size == 0 and json_ints("[3,-1,0]").tolist() == [3, -1, 0]


# ---------------------------------------------------------------- in a real browser


@pytest.mark.browser
def test_browser_dashboard_on_wice_gpt4_shows_revise_and_lenient(
    wice_db: Database, db_path: Path, tmp_path: Path
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from .browser.conftest import (
        CHROMIUM,
        CHROMIUM_ARGS,
        SCREENSHOTS,
        require_browser,
        server_errors,
        start_app,
    )

    sync_api = require_browser()

    def drive(url: str) -> None:
        # Its own thread: the browser suite's session-wide Playwright keeps an event loop running
        # on the main thread, and a second sync Playwright there would refuse to start.
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.set_default_timeout(30_000)
                page.goto(f"{url}/dashboard")
                page.get_by_label("Your name").fill("lead")  # no leads configured: any name is one
                page.keyboard.press("Enter")
                page.locator(".st-key-decision").wait_for()  # the newest run (gpt-3.5) is drawn
                page.get_by_role("combobox", name="Judge run").click()
                page.get_by_role("option", name=GPT4).click()
                page.get_by_text("19 times").first.wait_for()
                assert page.locator(".st-key-decision").get_by_text("revise", exact=True).is_visible()
                page.get_by_text("How this is computed").click()
                assert page.get_by_text("• judge is lenient").first.is_visible()
                assert page.get_by_text("Claims behind: judge is lenient (19)").is_visible()
                page.screenshot(path=str(SCREENSHOTS / "dashboard-wice-gpt4.png"), full_page=True)
            finally:
                browser.close()

    log = tmp_path / "streamlit.log"
    with start_app(db_path, log) as url, ThreadPoolExecutor(1) as pool:
        pool.submit(drive, url).result()
    assert not server_errors(log)


# ---------------------------------------------------------------- QA pass: unresolved claims


def test_an_unclear_mark_leaves_a_claim_unresolved_everywhere(cycle_db: Database) -> None:
    db = cycle_db
    run = store.find_judge_run(db, DEMO_RUN).id
    q4 = store.claim_pk(db, "Q4", "c1")  # bob said SUPPORTED; ann now marks it unclear
    store.record_label(db, claim=q4, reviewer="ann", kind="unclear", note="needs discussion")
    cols = store.stats_columns(db, run)
    assert "Q4/c1" in cols.unresolved and "Q4/c1" not in cols.keys
    assert "Q4/c1" in stats_input(db, run).unresolved
    d = dashboard.build(db, run=DEMO_RUN, bootstrap=0)
    pending = {p.key: p for p in d.pending}
    assert set(pending) == {"Q3/c1", "Q4/c1"}
    assert {(r["reviewer"], r["verdict"], r["note"]) for r in pending["Q4/c1"].reviewers} == {
        ("ann", dashboard.UNCLEAR, "needs discussion"),
        ("bob", "SUPPORTED", ""),
    }
    assert {(r["reviewer"], r["verdict"]) for r in pending["Q3/c1"].reviewers} == {
        ("ann", "SUPPORTED"),
        ("bob", "UNSUPPORTED"),
    }
    assert pending["Q3/c1"].judge in agreement.LABELS and pending["Q3/c1"].claim
    # A lead's decision settles it.
    store.adjudicate(db, claim=q4, adjudicator="lead", verdict="CONTRADICTED")
    cols = store.stats_columns(db, run)
    assert "Q4/c1" not in cols.unresolved
    assert agreement.LABELS[int(cols.human[cols.keys.index("Q4/c1")])] == "CONTRADICTED"


def test_page_lists_unresolved_claims_and_adjudicates_them(cycle_db: Database, page_db: str | Path) -> None:
    at = render()
    assert any(h.value == "Needs a lead's decision" for h in at.subheader)
    q3 = store.claim_pk(cycle_db, "Q3", "c1")
    assert "Q3 / c1" in texts(at)
    # Untrusted text is literal: the claim through st.text, the ids as selectbox keys.
    at.selectbox(key=f"dash_adj_verdict_{q3}").set_value("UNSUPPORTED")
    at.text_input(key=f"dash_adj_note_{q3}").input("checked S1")
    at.button(key=f"dash_adj_button_{q3}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    row = store.answers.adjudication(cycle_db, q3)
    assert row is not None and row[:3] == ("UNSUPPORTED", "lead", "checked S1")
    assert "Q3 / c1" not in texts(at)
    assert any("Adjudication recorded" in s.value for s in at.success)


def test_an_adjudication_note_with_a_nul_is_refused_and_nothing_recorded(
    cycle_db: Database, page_db: str | Path
) -> None:
    at = render()
    q3 = store.claim_pk(cycle_db, "Q3", "c1")
    at.selectbox(key=f"dash_adj_verdict_{q3}").set_value("UNSUPPORTED")
    at.text_input(key=f"dash_adj_note_{q3}").input("checked\x00S1")
    at.button(key=f"dash_adj_button_{q3}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [e.value for e in at.error] == ["Not recorded."]
    assert "note: contains a NUL character (U+0000) at character 8; type it again without it" in texts(at)
    assert store.answers.adjudication(cycle_db, q3) is None


def test_the_page_opens_on_the_latest_imported_run_with_labels(
    cycle_db: Database, page_db: str | Path, tmp_path: Path
) -> None:
    src = tmp_path / "later.jsonl"
    src.write_text(
        json.dumps(
            {
                "id": "later/1",
                "question": "q",
                "answer": "a",
                "judge_model": "later-judge",
                "judge_prompt_version": "v9",
                "chunks": [{"id": "S1", "text": "t"}],
                "claims": [{"id": "c1", "claim": "x", "verdict": "SUPPORTED"}],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    import_answers(cycle_db, src)
    assert store.find_judge_run(cycle_db, None).name == "later-judge@v9"  # newest, but nobody labeled it
    assert dashboard.default_run(cycle_db) == DEMO_RUN
    at = render()
    assert at.selectbox(key="dash_run").value == DEMO_RUN


def test_every_screen_counts_an_adjudicated_unclear_claim_as_labeled(demo_db: Database) -> None:
    db = demo_db
    run = store.find_judge_run(db, DEMO_RUN)
    claims = [pk for (pk,) in db.execute("SELECT id FROM claims ORDER BY id LIMIT 2")]
    store.record_label(db, claim=claims[0], reviewer="ann", kind="blind", verdict="SUPPORTED")
    store.record_label(db, claim=claims[1], reviewer="ann", kind="unclear")
    store.adjudicate(db, claim=claims[1], adjudicator="lead", verdict="UNSUPPORTED")
    figures = dashboard.build(db, run=DEMO_RUN, bootstrap=0).report.n_claims
    (home,) = [r.labeled_claims for r in store.info(db)["runs"] if r.run.id == run.id]
    assert figures == home == store.info(db)["totals"]["labeled_claims"] == 2
    assert store.lab.labeled_claim_counts(db)[run.id] == 2  # the Judge lab's count


def test_default_run_falls_back_to_the_latest_import(demo_db: Database) -> None:
    assert dashboard.default_run(demo_db) == store.find_judge_run(demo_db, None).name


def test_default_run_is_the_run_the_team_reviewed_last(wice_db: Database) -> None:
    db, gpt4, gpt35 = wice_db, "gpt-4-0613@wice-gpt4", "gpt-3.5-turbo-0613@wice-gpt35"
    assert dashboard.default_run(db) == gpt35  # both labeled by the import: the newest import

    def review(cycle: str, run: str, reviewer: str) -> None:
        created = cycles.create_cycle(
            db, name=cycle, judge_run=run, size=3, seed=1, force=True, include_labeled=True
        )
        answer = cycles.cycle_answers(db, created.id)[0].answer_id
        claim = store.claim_pk(db, answer, f"{answer}-c1")  # one claim per WiCE answer
        store.record_label(
            db, claim=claim, reviewer=reviewer, kind="blind", verdict="SUPPORTED", cycle_id=created.id
        )

    review("gpt-4 week", gpt4, "ann")
    assert dashboard.default_run(db) == gpt4  # the team reviewed the gpt-4 run last
    review("gpt-3.5 week", gpt35, "bea")
    assert dashboard.default_run(db) == gpt35
    review("gpt-4 again", gpt4, "ann")
    assert dashboard.default_run(db) == gpt4


# ---------------------------------------------------------------- QA pass: readability


def test_no_none_in_any_table_and_one_number_style(cycle_db: Database, page_db: str | Path) -> None:
    cycles.close_cycle(cycle_db, "week 1", force=True)
    at = render(**{f"dash_scope_{DEMO_RUN}": 1})
    for frame in at.dataframe:
        df = frame.value
        assert not df.isna().any().any(), df
        assert not (df.astype(str) == "None").any().any(), df
    d = dashboard.build(cycle_db, run=DEMO_RUN, cycle="week 1", bootstrap=0)
    (trend,) = dashboard.trend_rows(d)
    import re

    assert re.fullmatch(r"\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC", trend["closed"]), trend["closed"]
    assert trend["agreement"].endswith("%") and len(trend["agreement"].split(".")[1]) == 2  # "80.0%"
    for row in dashboard.per_class_rows(d):
        assert all(row[k] == "–" or row[k].endswith("%") for k in ("precision", "recall", "F1"))
    assert plural(1, "answer") == "1 answer" and plural(2, "answer") == "2 answers"
    assert plural(1234, "claim") == "1,234 claims"
    assert fmt.p_value(0.123456) == "p = 0.12"


def test_imported_labels_are_not_counted_as_zero_percent_slips(
    wice_db: Database, page_db: str | Path
) -> None:
    d = dashboard.build(wice_db, run=GPT4, bootstrap=0)
    assert d.reviewers and all(r.reviewed == 0 and r.slip_rate is None for r in d.reviewers)
    rows = dashboard.reviewer_table(d)
    assert all(r["slip rate"] == dashboard.NO_REVIEWED for r in rows)
    at = render(dash_run=GPT4)
    reviewers = next(f.value for f in at.dataframe if "slip rate" in f.value.columns)
    assert set(reviewers["slip rate"]) == {"no reviewed labels yet"}


def test_slips_count_only_reviewed_labels(cycle_db: Database) -> None:
    pk = (
        store.claim_pk(cycle_db, "Q5", "c1")
        if cycle_db.execute("SELECT 1 FROM claims WHERE answer_id = 'Q5'").fetchone()
        else store.claim_pk(cycle_db, "Q4", "c2")
    )
    store.record_label(cycle_db, claim=pk, reviewer="ann", kind="import", verdict="CONTRADICTED")
    d = dashboard.build(cycle_db, run=DEMO_RUN, bootstrap=0)
    ann = next(r for r in d.reviewers if r.reviewer == "ann")
    assert ann.reviewed == 2 and ann.slips == 1 and ann.slip_rate == 0.5  # the keep and the judge_right


# ---------------------------------------------------------------- QA pass: weighted flag


@pytest.fixture
def failures_first_db(fresh_db: Database, tmp_path: Path) -> Database:
    """400 one-claim answers; a failures-first cycle took every judge failure (80, p = 1) and one
    agreeing answer in ten (320 of 3,200 in the run, p = 0.1). Raw agreement 80%: below the 85%
    target even at its Wilson upper bound; re-weighted to the run 97.6%. Disagreements are
    symmetric (no McNemar skew) and kappa about 0.70 (above the floor)."""
    db = fresh_db
    labels = agreement.LABELS
    rows = [(h, h, 0.1) for h in labels for _ in range(320 // 3 + (h == labels[0]) * (320 % 3))]
    for human, judge in (
        ("SUPPORTED", "CONTRADICTED"),
        ("CONTRADICTED", "SUPPORTED"),
        ("UNSUPPORTED", "CONTRADICTED"),
        ("CONTRADICTED", "UNSUPPORTED"),
    ):
        rows += [(human, judge, 1.0)] * 20
    src = tmp_path / "ff.jsonl"
    with src.open("w", encoding="utf-8") as fh:
        for i, (_h, judge, _p) in enumerate(rows):
            fh.write(
                json.dumps(
                    {
                        "id": f"a{i:03d}",
                        "question": "q",
                        "answer": "a",
                        "judge_model": "m",
                        "judge_prompt_version": "ff",
                        "chunks": [{"id": "S1", "text": "t"}],
                        "claims": [{"id": "c1", "claim": "x", "verdict": judge}],
                    }
                )
                + "\n"
            )
    import_answers(db, src)
    run = store.find_judge_run(db, "m@ff").id
    with store.write(db):
        cyc = db.execute(
            "INSERT INTO cycles (name, judge_run_id, strategy, seed, size, created_at) "
            "VALUES ('ff', :judge_run_id, 'failures-first', 0, :size, :created_at) RETURNING id",
            {"judge_run_id": run, "size": len(rows), "created_at": store.now()},
        ).fetchone()[0]
        for i, (_h, _j, p) in enumerate(rows):
            db.execute(
                "INSERT INTO cycle_answers (cycle_id, answer_id, position, inclusion_prob) "
                "VALUES (:cycle_id, :answer_id, :position, :inclusion_prob)",
                {"cycle_id": cyc, "answer_id": f"a{i:03d}", "position": i, "inclusion_prob": p},
            )
    # Labeled in a random order, as reviewers working through a shuffled queue would: the
    # flag's sequential rules read labels in the order they came.
    for i in np.random.default_rng(5).permutation(len(rows)).tolist():
        store.record_label(
            db, claim=store.claim_pk(db, f"a{i:03d}", "c1"), reviewer="ann", kind="import", verdict=rows[i][0]
        )
    return db


def test_every_figure_shows_the_headers_agreement_and_names_the_raw_one(failures_first_db: Database) -> None:
    d = dashboard.build(failures_first_db, run="m@ff", cycle="ff", bootstrap=0)
    assert d.decision is not None
    (agreement,) = [f for f in dashboard.headline(d) if f.label == "Agreement"]
    assert agreement.value == d.decision.figure != "80.0%"  # the estimate, not the raw figure
    assert "raw 80.0% on the labeled claims as they are" in agreement.note
    assert f"Agreement      {d.decision.figure:>7}   " in d.report.to_text("m@ff")


def test_the_flag_reads_the_reweighted_agreement_of_a_failures_first_cycle(
    failures_first_db: Database,
) -> None:
    db = failures_first_db
    raw = dashboard.build(db, run="m@ff", bootstrap=300)  # every answer of the run is labeled
    assert raw.report.agreement.value == pytest.approx(0.8)
    assert raw.report.agreement.ci_high < 0.85
    # The running bounds still straddle the target, but nothing is left to label: the final reading
    # finds the fixed-sample interval below it, and the flag says which reading decided.
    assert raw.report.flag.status == "revise" and raw.report.flag.reading == "final"
    assert [r.code for r in raw.reasons] == ["agreement_below_target"]
    assert "at the final reading" in raw.reasons[0].message
    # The header says which reading decided, and the assessment carries it.
    assert raw.assessment.reading == "final" and raw.assessment.to_dict()["reading"] == "final"
    assert raw.decision is not None and dashboard.FINAL_READING_WORDS in raw.decision.sentence
    assert "at the final reading" in raw.assessment.line()
    d = dashboard.build(db, run="m@ff", cycle="ff", bootstrap=300)
    assert d.oversampled and d.report.weighted is not None
    w = d.report.weighted
    assert w.value == pytest.approx(3200 / 3280) and w.ci_low >= 0.85 and w.raw == pytest.approx(0.8)
    assert d.report.agreement.value == pytest.approx(0.8)  # the raw figure stays beside it
    assert d.report.flag.status == "ok"
    (reason,) = d.reasons
    assert reason.code == "agreement_meets_target"
    assert reason.message.startswith(
        "agreement estimated for the 3,280 answers not labeled before cycle ff (raw 80.0%) 97.6%"
    )
    assert any(f.label == "Re-weighted agreement" for f in dashboard.headline(d))


def test_page_export_warns_about_golden_items_without_a_source(
    cycle_db: Database, page_db: str | Path
) -> None:
    at = render(dash_export_format="golden")
    warnings = [w.value for w in at.warning if "expected_source" in w.value]
    counts = export.golden_counts(cycle_db, judge_run=DEMO_RUN)
    assert counts.no_source and warnings == [counts.warning()]


def test_the_pipeline_section_states_the_judges_rate_and_the_corrected_one(wice_db: Database) -> None:
    d = dashboard.build(wice_db, run="wice-gpt4", bootstrap=0)
    text = " ".join(dashboard.pipeline_text(d))
    # WiCE gpt-4: the judge calls 37 of 100 claims SUPPORTED; the annotators 22 (all labeled).
    assert "37.0% of the run's 100 judged claims SUPPORTED" in text and "22.0%" in text
    assert "Assumes the judge's error rates" in text
    assert dashboard.pipeline_rows(d)[0]["judge's own"] == "37.0%"


def test_grounding_uses_every_reviewers_verdict_as_a_soft_label(mixed_db: Database) -> None:
    from calibration import report as report_mod

    run = store.find_judge_run(mixed_db, RUN_A)
    scoped = report_mod.scope_report(mixed_db, run, bootstrap=0)
    sr = scoped.report.pipeline["supported_rate"]
    assert "soft labels" in sr["method"] and sr["n_effective"] > 0
    # From scratch: soft label = share of the claim's reviewers (blind verdict, else final) saying
    # SUPPORTED, the lead's verdict on adjudicated claims; two-phase over the judge's verdict classes,
    # post-stratified on the answers' all-SUPPORTED strata.
    table = scoped.table
    lab = table.labels
    said: dict[int, list[int]] = {}
    for c, b, f in zip(lab.claim.tolist(), lab.blind.tolist(), lab.final.tolist(), strict=True):
        if max(b, f) >= 0:
            said.setdefault(c, []).append(int((b if b >= 0 else f) == 0))
    statuses = table.statuses()
    for c, s in enumerate(statuses):
        if s == "adjudicated":
            said[c] = [int(table.human[c] == 0)] * max(1, len(said.get(c, [])))
    answers = range(len(table.answer_ids))
    all_s = {a: all(table.judge[c] == 0 for c in range(len(table)) if table.answer[c] == a) for a in answers}
    big_n = Counter(all_s.values())
    small_n = Counter(all_s[a] for a in {int(table.answer[c]) for c in said})
    value = 0.0
    for v in (0, 1):
        cls = [c for c in range(len(table)) if (table.judge[c] == 0) == bool(v)]
        stratum = {c: all_s[int(table.answer[c])] for c in cls if c in said}
        w = {c: big_n[h] / small_n[h] for c, h in stratum.items()}
        rate = sum(w[c] * np.mean(said[c]) for c in w) / sum(w.values())
        value += len(cls) / len(table) * rate
    assert sr["value"] == pytest.approx(value, abs=1e-12)
    # Not a census: the interval is there even though the labels cover most answers.
    assert sr["ci_low"] is not None and sr["ci_low"] < value < sr["ci_high"]


# ---------------------------------------------------------------- the decision header


def _assessed(report: dict) -> assessment.Assessment:
    return assessment.of_report(report, scope="every labeled claim of the run")


def _report_dict(
    status: str,
    value: float | None,
    low: float | None,
    high: float | None,
    *,
    lenient: int = 0,
    strict: int = 0,
    direction: str = "none",
    people: float | None = None,
    unresolved: int = 0,
    disagreeing: int = 0,
    needed: int | None = None,
    n_claims: int = 100,
    diff: tuple[float, float, float] | None = None,
) -> dict:
    """A report in its JSON form (`Report.to_dict`) holding what the header reads; `diff` is the
    design-based lenient - strict difference (value, low, high)."""
    estimated = None
    if diff is not None:
        estimated = {
            "lenient_share": {"value": lenient / n_claims},
            "strict_share": {"value": strict / n_claims},
            "difference": dict(zip(("value", "ci_low", "ci_high"), diff, strict=True)),
        }
    return {
        "n_claims": n_claims,
        "n_unresolved": unresolved,
        "agreement": {
            "value": 0.5,
            "ci_low": 0.1,
            "ci_high": 0.9,  # raw: never the headline
            "estimated": {"value": value, "ci_low": low, "ci_high": high},
        },
        "direction": {
            "lenient": lenient,
            "strict": strict,
            "rule": {"status": direction},
            "estimated": estimated,
        },
        "human_ceiling": None
        if people is None
        else {"reviewer_vs_reviewer": {"value": people}, "alt_test": {"verdict": None}},
        "disagreeing_claims": [f"a/{i}" for i in range(disagreeing)],
        "n_disagreeing": disagreeing,
        "flag": {"status": status, "claims_needed": needed},
    }


@pytest.mark.parametrize(
    ("report", "word", "sentence", "steps"),
    [
        (
            _report_dict(
                "revise",
                0.77,
                0.74,
                0.79,
                lenient=12,
                strict=3,
                direction="lenient",
                people=0.84,
                disagreeing=15,
            ),
            "revise",
            "The judge agrees with reviewers on 77.0% of claims (74.0%–79.0%); reviewers agree with each "
            "other "
            "on 84.0%. It misses hallucinations more often than it invents them. Revise the prompt.",
            ["plan", "judge_lab"],
        ),
        (
            _report_dict(
                "ok",
                0.93,
                0.90,
                0.95,
                lenient=2,
                strict=3,
                unresolved=3,
                disagreeing=5,
                diff=(-0.01, -0.04, 0.02),
            ),
            "ok",
            "The judge agrees with reviewers on 93.0% of claims (90.0%–95.0%). Its misses and false alarms "
            "are "
            "within chance of each other. Keep it running.",
            ["plan", "judge_lab", "settle"],
        ),
        (
            _report_dict(
                "inconclusive", 0.8, 0.6, 0.9, strict=4, direction="strict", needed=1450, disagreeing=4
            ),
            "not yet decided",
            "The judge agrees with reviewers on 80.0% of claims (60.0%–90.0%). It invents hallucinations "
            "more "
            "often than it misses them. Label about 1,450 more claims to decide.",
            ["plan", "judge_lab"],
        ),
        (
            # The flag's anytime rule has not fired, but the interval lies above 0: lenient, by its size.
            _report_dict(
                "ok", 0.9, 0.88, 0.92, lenient=133, strict=72, n_claims=1000, diff=(0.061, 0.037, 0.086)
            ),
            "ok",
            "The judge agrees with reviewers on 90.0% of claims (88.0%–92.0%). It misses hallucinations "
            "more often than it invents them. Keep it running.",
            ["plan"],
        ),
        (
            _report_dict("inconclusive", None, None, None, n_claims=0),
            "not yet decided",
            "No claim has both a judge verdict and a final human label yet. Label claims to decide.",
            ["plan"],
        ),
    ],
)
def test_decision_header_of_known_reports(report: dict, word: str, sentence: str, steps: list[str]) -> None:
    d = dashboard.decision(_assessed(report))
    assert (d.word, d.sentence, [s.kind for s in d.steps]) == (word, sentence, steps)
    assert d.colour == dashboard.VERDICT_COLOURS[d.status]


def test_direction_is_told_by_its_size_and_within_chance_only_when_the_interval_holds_0() -> None:
    lenient = _report_dict(
        "ok", 0.9, 0.88, 0.92, lenient=133, strict=72, n_claims=1000, diff=(0.061, 0.037, 0.086)
    )
    d = dashboard.decision(_assessed(lenient))
    assert d.direction.endswith("misses 13.3%, invents 7.2% of claims: +6.1 points, 95% CI +3.7 to +8.6.")
    assert "within chance" not in d.sentence
    strict = _report_dict(
        "ok", 0.9, 0.88, 0.92, lenient=10, strict=30, n_claims=1000, diff=(-0.02, -0.03, -0.01)
    )
    assert "It invents hallucinations more often" in dashboard.decision(_assessed(strict)).sentence
    even = _report_dict(
        "ok", 0.9, 0.88, 0.92, lenient=10, strict=12, n_claims=1000, diff=(-0.002, -0.01, 0.006)
    )
    assert "within chance of each other" in dashboard.decision(_assessed(even)).sentence
    # A frozen report without the estimate: the counts and the rule, never "within chance".
    old = _report_dict("ok", 0.9, 0.88, 0.92, lenient=10, strict=12, n_claims=1000)
    assert "is not known: the difference has no interval" in dashboard.decision(_assessed(old)).sentence
    assert "within chance" not in dashboard.decision(_assessed(old)).sentence


@pytest.mark.parametrize(
    ("status", "nxt", "steps", "says"),
    [
        # An open decision its plan expects within a few cycles: plan them.
        ("inconclusive", cycles.NextCycle("agreement", 30, 2, 30, 400), ["plan"], "Label about 90 more"),
        # Its plan needs more than a few: no plan offered, and the header says why.
        ("inconclusive", cycles.NextCycle("agreement", 30, 7, 30, 400), [], "needs about 7 cycles of 30"),
        (
            "inconclusive",
            cycles.NextCycle("agreement", 30, None, 30, 400),
            [],
            "needs more than 20 cycles of 30",
        ),
        # A decided judge: the next cycle serves the grounding score, however long that takes.
        ("revise", cycles.NextCycle("grounding", 30, None, 30, 400), ["plan"], "Revise the prompt."),
        # Its plan needs more answers than the run has left: no plan of full cycles offered.
        (
            "inconclusive",
            cycles.NextCycle("agreement", 30, 2, 30, 59, 60),
            [],
            "59 answers can still be drawn",
        ),
        # A run with fewer answers left than a full cycle: the cycle offered is what it has.
        ("inconclusive", cycles.NextCycle("agreement", 20, 1, 30, 20, 20), ["plan"], "Label about 90 more"),
        # Nothing left to draw: import more answers, whatever the flag.
        ("inconclusive", cycles.NextCycle("agreement", 0, None, 30, 0), ["import"], "no cycle can draw more"),
        ("revise", cycles.NextCycle("agreement", 0, None, 30, 0), ["import"], "Revise the prompt."),
    ],
)
def test_the_header_offers_only_a_next_step_that_can_work(
    status: str, nxt: cycles.NextCycle, steps: list[str], says: str
) -> None:
    report = _report_dict(status, 0.84, 0.80, 0.88, needed=90)
    report["thresholds"] = {"agreement_target": 0.85}
    d = dashboard.decision(_assessed(report), next_cycle=nxt)
    assert [s.kind for s in d.steps] == steps
    assert says in d.sentence
    assert all("cycle of 30" not in s.label for s in d.steps if nxt.answers_left < 30)
    if not steps or steps == ["import"]:
        assert "Label about" not in d.sentence  # no advice the plan's own arithmetic rejects


def test_a_fully_labeled_run_offers_importing_not_planning(wice_db: Database) -> None:
    d = dashboard.build(wice_db, run="wice-gpt4", bootstrap=0)
    assert d.next_cycle is not None and d.next_cycle.answers_left == 0
    assert d.decision is not None and [s.kind for s in d.decision.steps] == ["judge_lab", "import"]


def test_decision_reads_the_estimated_agreement_and_offers_closing_an_open_cycle() -> None:
    report = _report_dict("revise", 0.77, 0.74, 0.79, unresolved=1)
    d = dashboard.decision(_assessed(report), open_cycle=True)
    assert (d.figure, d.interval) == ("77.0%", "74.0%–79.0%")
    assert [s.label for s in d.steps] == [
        "Plan the next cycle",
        "Settle the 1 unclear claim",
        "Close the cycle",
    ]
    # An older snapshot without the design-based estimate: the raw figure is the headline.
    del report["agreement"]["estimated"]
    a = _assessed(report).agreement
    assert (a.value, a.low, a.high) == (0.5, 0.1, 0.9)


def test_the_header_follows_the_flag_when_the_claims_left_cannot_decide() -> None:
    report = _report_dict("inconclusive", 0.77, 0.66, 0.86)
    report["sample_size"] = {"more_claims_for_target": {"median": None, "available": 45}}
    # The plan's fixed-sample arithmetic expects one cycle; the flag's running rule expects no
    # decision from all 45 claims left: the header says the flag's answer and offers importing.
    d = dashboard.decision(_assessed(report), next_cycle=cycles.NextCycle("agreement", 20, 1, 30, 46))
    assert [s.kind for s in d.steps] == ["import"]
    assert "Labeling all 45 unlabeled claims the run has left is not expected to decide" in d.sentence
    assert "Label " not in d.sentence
    report["sample_size"]["more_claims_for_target"]["median"] = 30
    d = dashboard.decision(_assessed(report), next_cycle=cycles.NextCycle("agreement", 20, 1, 30, 46))
    assert [s.kind for s in d.steps] == ["plan"] and "not expected" not in d.sentence


def test_a_cycle_of_an_exhausted_run_says_the_run_takes_the_final_reading() -> None:
    # A cycle's flag is never read finally, so it may stay open where the run's is decided.
    exhausted = cycles.NextCycle("agreement", 20, None, 20, 0)
    report = _report_dict("inconclusive", 0.556, 0.388, 0.712)
    run = dashboard.decision(_assessed(report), next_cycle=exhausted)
    assert run.about == "verdict on the judge run" and "no final reading" not in run.sentence
    cycle = dashboard.decision(_assessed(report), next_cycle=exhausted, cycle_scope=True)
    assert cycle.about == "verdict on the cycle"
    assert cycle.sentence.endswith(dashboard.CYCLE_READING_WORDS)
    assert "no cycle can draw more" in cycle.sentence


def test_the_sample_size_line_says_a_decided_target_as_stats_does(wice_db: Database) -> None:
    d = dashboard.build(wice_db, run=GPT4, bootstrap=0)
    assert d.report.sample_size.more_claims_for_target == 0
    assert d.report.sample_size.target_sentence == "the 85% target is already decided"
    assert d.sample_size_text.endswith("; the 85% target is already decided.")


def test_a_single_category_row_is_the_scopes_assessment(wice_db: Database) -> None:
    d = dashboard.build(wice_db, run=GPT4, bootstrap=0)
    (row,) = d.categories  # every WiCE answer is in one category
    a = d.assessment
    assert (row.n_claims, row.agreement, row.agreement_low, row.agreement_high, row.kappa) == (
        a.counts.labeled,
        a.agreement.value,
        a.agreement.low,
        a.agreement.high,
        a.kappa.value,
    )
    assert (row.lenient, row.strict) == (a.lenient, a.strict)


def test_stats_json_and_the_dashboard_read_one_assessment(cycle_db: Database) -> None:
    from calibration import report

    run = store.find_judge_run(cycle_db, DEMO_RUN)
    d = dashboard.build(cycle_db, run=DEMO_RUN, bootstrap=0)
    scoped, assessed = report.assess(cycle_db, run, bootstrap=0)
    out = report.stats_json(scoped, assessed, None)
    assert out["assessment"] == d.assessment.to_dict() == assessed.to_dict()
    assert out["assessment"]["agreement"]["value"] == out["agreement"]["estimated"]["value"]
    assert d.decision is not None and d.decision.figure == fmt.cell_pct(assessed.agreement.value)


def test_the_dashboard_builds_its_decision_from_the_report(cycle_db: Database) -> None:
    name = cycles.list_cycles(cycle_db)[0].name
    d = dashboard.build(cycle_db, run=DEMO_RUN, cycle=name, bootstrap=0)
    assert d.decision == dashboard.decision(
        d.assessment, open_cycle=d.open_cycle, next_cycle=d.next_cycle, cycle_scope=True
    )
    assert d.decision is not None and d.decision.about == "verdict on the cycle"
    assert d.assessment == assessment.of_report(d.report.to_dict(d.run), scope=f"cycle {name}")
    assert d.decision is not None and d.decision.status == d.report.flag.status


def test_sealed_disagreements_are_counted_and_named(wice_db: Database) -> None:
    from calibration import split

    run = GPT4
    assert dashboard.sealed_text(dashboard.build(wice_db, run=run, bootstrap=0).assessment) == ""
    s = split.ensure_split(wice_db, stratify_run=store.find_judge_run(wice_db, run))
    held = set(s.holdout)
    d = dashboard.build(wice_db, run=run, bootstrap=0)
    # Independently: every disagreeing claim of the run, from the confusion matrix's off-diagonal.
    total = int(d.report.confusion.sum() - np.trace(d.report.confusion))
    counts = d.assessment.counts
    hidden = total - len(d.report.disagreeing_claims)
    assert hidden > 0 and not held & {k.split("/")[0] for k in d.report.disagreeing_claims}
    assert (counts.disagreeing, counts.listed, counts.sealed) == (total, total - hidden, hidden)
    assert dashboard.sealed_text(d.assessment) == (
        f"{hidden:,} more {'is' if hidden == 1 else 'are'} in the sealed holdout "
        "(counted in the figures, not listed)."
    )


@pytest.mark.parametrize("run", [RUN_A, RUN_B])
def test_every_listed_claim_row_has_its_claim_human_and_judge_cells(mixed_db: Database, run: str) -> None:
    # Several reviewers: a reason also counts claims whose final label agrees with the judge
    # (reconciled, adjudicated) or that have none (disputed); each is listed whole.
    d = dashboard.build(mixed_db, run=run, bootstrap=0)
    assert d.report.basis == "per_reviewer"
    reasons = [r for r in d.reasons if r.claim_keys]
    assert reasons
    for reason in reasons:
        rows = dashboard.claim_rows(d, reason.claim_keys)
        assert len(rows) == len(reason.claim_keys), reason.code
        assert all(r["claim"] and r["human"] and r["judge"] for r in rows), reason.code
    rows = dashboard.disagreement_rows(d)
    assert len(rows) == len(d.report.disagreeing_claims)
    assert all(r["claim"] and r["human"] and r["judge"] for r in rows)
    # A disputed claim shows every reviewer's verdict, as the figures count them.
    assert any(" / " in r["human"] for r in rows)


def test_no_holdout_no_sealed_count_with_several_reviewers(mixed_db: Database) -> None:
    # The matrix counts (claim, reviewer) verdicts here; the counts count claims, none sealed.
    d = dashboard.build(mixed_db, run=RUN_A, bootstrap=0)
    counts = d.assessment.counts
    assert counts.verdicts > counts.disagreeing == counts.listed and counts.sealed == 0
    assert dashboard.sealed_text(d.assessment) == "" and "sealed" not in counts.sentence()
