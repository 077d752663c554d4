"""`python -m calibration stats` and `thresholds` on the real WiCE data, and the store side of them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from calibration import cycles, store
from calibration.cli import main
from calibration.errors import InputError
from calibration.flag import Thresholds
from calibration.store import Database
from tests.records import stats_input


def _stats_json(db_url: str | Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert main(["--db", str(db_url), "stats", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_wice_gpt4_is_flagged_revise_judge_lenient(wice_db, db_url, capsys):
    assert main(["--db", str(db_url), "stats", "--judge-run", "wice-gpt4"]) == 0
    out = capsys.readouterr().out
    assert "judge run gpt-4-0613@wice-gpt4" in out
    # The first interval printed is the design-based one, answers as clusters.
    assert "Agreement        77.0%   95% CI 69.0%–83.4% (design-based, answers as clusters)" in out
    assert "Flag: REVISE" in out
    assert "judge is lenient" in out
    assert "Confusion matrix (rows human, columns judge)" in out


def test_wice_gpt4_json_against_independent_figures(wice_db, db_url, capsys):
    d = _stats_json(db_url, capsys, "--judge-run", "gpt-4-0613@wice-gpt4")
    assert d["judge_run"] == "gpt-4-0613@wice-gpt4"
    assert (d["n_claims"], d["n_answers"], d["n_unlabeled"], d["cycle"]) == (100, 100, 0, None)
    assert d["confusion"]["matrix"] == [[18, 0, 4], [0, 0, 0], [19, 0, 59]]
    assert d["agreement"]["value"] == pytest.approx(0.77)
    ref = sm_cohens_kappa(np.array([[18, 4], [19, 59]]))
    assert d["kappa"]["value"] == pytest.approx(ref.kappa)
    assert (d["kappa"]["ci_low"], d["kappa"]["ci_high"]) == pytest.approx((ref.kappa_low, ref.kappa_upp))
    assert d["kappa_bootstrap"]["ci_low"] < d["kappa"]["value"] < d["kappa_bootstrap"]["ci_high"]
    assert (d["direction"]["lenient"], d["direction"]["strict"]) == (19, 4)
    assert d["flag"]["status"] == "revise"
    lenient = next(r for r in d["flag"]["reasons"] if r["code"] == "judge_lenient")
    assert len(lenient["claim_ids"]) == 19
    assert all(key.startswith("test") and "/" in key for key in lenient["claim_ids"])


def test_default_run_is_the_newest_and_unknown_runs_fail(wice_db, db_url, capsys):
    assert _stats_json(db_url, capsys)["judge_run"] == "gpt-3.5-turbo-0613@wice-gpt35"
    assert main(["--db", str(db_url), "stats", "--judge-run", "nope"]) == 1
    assert "unknown judge run" in capsys.readouterr().err


def test_thresholds_are_stored_and_used(wice_db, db_url, capsys):
    db = str(db_url)
    assert main(["--db", db, "thresholds"]) == 0
    assert "agreement target 0.85, kappa floor 0.6, alpha 0.05" in capsys.readouterr().out
    assert (
        main(
            [
                "--db",
                db,
                "thresholds",
                "--agreement-target",
                "0.5",
                "--kappa-floor",
                "0.3",
                "--alpha",
                "0.001",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert store.load_thresholds(wice_db) == Thresholds(0.5, 0.3, 0.001)
    d = _stats_json(db_url, capsys, "--judge-run", "wice-gpt4", "--bootstrap", "0")
    assert d["thresholds"] == {
        "agreement_target": 0.5,
        "kappa_floor": 0.3,
        "alpha": 0.001,
        "alt_epsilon": 0.15,
    }
    # 77% against a 50% target (running lower bound above 50% at alpha 0.001), kappa 0.46 over 0.30.
    # Every claim of the run is labeled, so the final reading is taken: the running rule does not show
    # the lenient skew (19 against 4) at alpha 0.001, the final reading's 99.95% interval does.
    assert d["agreement"]["rule"]["bound_low"] >= 0.5 and d["agreement"]["rule"]["reading"] == "running"
    assert d["flag"]["status"] == "revise" and d["flag"]["reading"] == "final"
    assert [r["code"] for r in d["flag"]["reasons"]] == ["judge_lenient"]
    assert d["direction"]["rule"]["status"] == "lenient" and d["direction"]["rule"]["bound_low"] <= 0
    assert "at the final reading" in d["flag"]["reasons"][0]["message"]
    assert main(["--db", db, "thresholds", "--alpha", "2"]) == 1
    assert store.load_thresholds(wice_db).alpha == 0.001


def test_save_thresholds_rejects_unknown_names(fresh_db):
    with pytest.raises(InputError):
        store.save_thresholds(fresh_db, agreement=0.9)
    assert store.get_setting(fresh_db, "stats.agreement_target") is None


def _label(db: Database, answer: str, reviewer: str, verdict: str) -> None:
    store.record_label(
        db, claim=store.claim_pk(db, answer, f"{answer}-c1"), reviewer=reviewer, kind="blind", verdict=verdict
    )


def test_stats_input_applies_the_final_label_rule(wice_db):
    run = store.find_judge_run(wice_db, "wice-gpt4")
    before = stats_input(wice_db, run.id)
    assert len(before.items) == 100 and before.unresolved == () and before.unlabeled == 0
    human = {it.claim_key: it.human for it in before.items}
    other = {"SUPPORTED": "UNSUPPORTED", "UNSUPPORTED": "SUPPORTED"}
    # A second reviewer agrees on one claim, disagrees on two; one disagreement is adjudicated.
    _label(wice_db, "test00017", "zoe", human["test00017/test00017-c1"])
    _label(wice_db, "test00064", "zoe", other[human["test00064/test00064-c1"]])
    _label(wice_db, "test00069", "zoe", other[human["test00069/test00069-c1"]])
    store.adjudicate(
        wice_db,
        claim=store.claim_pk(wice_db, "test00069", "test00069-c1"),
        adjudicator="lead",
        verdict="CONTRADICTED",
    )
    # A skip carries no verdict and must not count as a label.
    store.record_label(
        wice_db, claim=store.claim_pk(wice_db, "test00093", "test00093-c1"), reviewer="zoe", kind="skip"
    )
    after = stats_input(wice_db, run.id)
    assert after.unresolved == ("test00064/test00064-c1",)
    final = {it.claim_key: it.human for it in after.items}
    assert len(final) == 99
    assert final["test00069/test00069-c1"] == "CONTRADICTED"
    assert final["test00093/test00093-c1"] == human["test00093/test00093-c1"]
    assert sum(1 for key, rev, _ in after.reviewer_labels if rev == "zoe") == 3


def test_stats_reports_unresolved_and_human_human(wice_db, db_url, capsys):
    run = store.find_judge_run(wice_db, "wice-gpt4")
    human = {it.claim_key: it.human for it in stats_input(wice_db, run.id).items}
    other = {"SUPPORTED": "UNSUPPORTED", "UNSUPPORTED": "SUPPORTED"}
    for answer in ("test00017", "test00064", "test00069", "test00093"):
        _label(wice_db, answer, "zoe", human[f"{answer}/{answer}-c1"])
    _label(wice_db, "test00345", "zoe", other[human["test00345/test00345-c1"]])
    d = _stats_json(db_url, capsys, "--judge-run", "wice-gpt4", "--bootstrap", "0")
    # Several reviewers on some claims: every reviewer's verdict counts, the disputed claim included.
    assert d["agreement"]["basis"] == "per_reviewer"
    assert d["n_claims"] == 100 and d["n_labels"] == 105
    assert d["unresolved_claims"] == ["test00345/test00345-c1"]
    # The unanimous view beside it leaves the disputed claim out.
    assert d["agreement_final_label"]["n_claims"] == 99
    assert d["agreement_final_label"]["n_left_out"] == 1
    assert d["human_human"]["n_claims"] == 5
    assert d["human_human"]["reviewers"] == ["wice-annotators", "zoe"]
    assert d["human_human"]["agreement"]["value"] == pytest.approx(0.8)
    assert main(["--db", str(db_url), "stats", "--judge-run", "wice-gpt4", "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "1 of them unresolved (reviewers disagree), each reviewer's verdict counted" in out
    assert "Final label" in out and "secondary view" in out
    assert "Human–human" in out


def test_stats_for_a_cycle_is_weighted_and_uses_the_cycle_run(wice_db, db_url, capsys):
    cycle = cycles.create_cycle(
        wice_db,
        name="c1",
        judge_run="wice-gpt4",
        size=20,
        seed=3,
        strategy="failures-first",
        include_labeled=True,
    )
    d = _stats_json(db_url, capsys, "--cycle", "c1")
    assert d["cycle"] == "c1"
    assert d["judge_run"] == "gpt-4-0613@wice-gpt4"
    assert d["n_claims"] == 20
    in_cycle = set(cycle.answers)
    assert {k.split("/")[0] for k in d["disagreeing_claims"]} <= in_cycle
    w = d["agreement_weighted"]
    assert w is not None and w["raw"] == pytest.approx(d["agreement"]["value"])
    probs = {i.answer_id: i.inclusion_prob for i in cycles.cycle_answers(wice_db, cycle.id)}
    agree = {k.split("/")[0] for k in d["disagreeing_claims"]}
    expected = sum(1 / p for a, p in probs.items() if a not in agree) / sum(1 / p for p in probs.values())
    assert w["value"] == pytest.approx(expected)


def test_stats_for_a_cycle_of_a_fully_labeled_run_names_the_reading(wice_db, db_url, capsys):
    from calibration.cli.labels import CYCLE_READING_NOTE

    cycles.create_cycle(wice_db, name="c1", judge_run="wice-gpt4", size=20, seed=3, include_labeled=True)
    assert main(["--db", str(db_url), "stats", "--cycle", "c1", "--bootstrap", "0"]) == 0
    cycle_text = capsys.readouterr().out
    assert main(["--db", str(db_url), "stats", "--judge-run", "wice-gpt4", "--bootstrap", "0"]) == 0
    run_text = capsys.readouterr().out
    # The run's report is decided at the final reading; the cycle's, which has none, says why not.
    assert "decided at the final reading" in run_text and CYCLE_READING_NOTE not in run_text
    assert f"Scope: cycle c1; 0 judged claims have no human label yet\n{CYCLE_READING_NOTE}\n" in cycle_text


def test_stats_on_an_empty_database_is_a_clear_error(tmp_path: Path, capsys):
    empty = tmp_path / "empty.db"
    store.connect(empty).conn.close()  # migrated, but nothing imported
    assert main(["--db", str(empty), "stats"]) == 1
    assert "no judge runs yet" in capsys.readouterr().err
