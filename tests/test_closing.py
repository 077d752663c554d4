"""Closing labeling for a run: the final reading taken at closing decides what the running rule left
open, labels given afterwards do not move it, no new cycle is drawn, and the CLI, the API and the
dashboard's header say who closed it and when."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import calibration
from calibration import closing, cycles, dashboard, report, store
from calibration.errors import ConflictError, InputError
from calibration.importing import import_answers, import_labels
from calibration.store import Database

from .conftest import RunCli

RUN = "m@v1"
LEAD = "Lena Lead"
# (human, judge, answers): 81% agreement on 800 one-claim answers, disagreements symmetric; the
# fixed-sample 95% interval lies below the 85% target while the running bounds straddle it.
LABELED = (
    ("SUPPORTED", "SUPPORTED", 400),
    ("SUPPORTED", "UNSUPPORTED", 76),
    ("UNSUPPORTED", "SUPPORTED", 76),
    ("UNSUPPORTED", "UNSUPPORTED", 248),
)
UNLABELED = 20  # answers a next cycle could still draw: labeling has not ended by itself


def _answers(path: Path, verdicts: list[str], version: str = "v1") -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i, verdict in enumerate(verdicts):
            record = {
                "id": f"{version}-a{i:04d}",
                "question": "q",
                "answer": "a",
                "judge_model": "m",
                "judge_prompt_version": version,
                "chunks": [{"id": "S1", "text": "t"}],
                "claims": [{"id": "c1", "claim": "x", "verdict": verdict}],
            }
            fh.write(json.dumps(record) + "\n")
    return path


def _labels(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text(
        "answer_id,claim_id,verdict,reviewer\n" + "".join(f"{a},c1,{v},ann\n" for a, v in rows),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def below_target_db(fresh_db: Database, tmp_path: Path) -> Database:
    """Run m@v1: 800 labeled answers at 81% agreement (undecided by the running rule, below the
    target at the fixed-sample 95% interval) and 20 answers left to label."""
    pairs = [(h, j) for h, j, n in LABELED for _ in range(n)]
    judged = [j for _h, j in pairs] + ["SUPPORTED"] * UNLABELED
    import_answers(fresh_db, _answers(tmp_path / "answers.jsonl", judged))
    import_labels(
        fresh_db, _labels(tmp_path / "labels.csv", [(f"v1-a{i:04d}", h) for i, (h, _j) in enumerate(pairs)])
    )
    return fresh_db


def _assess(db: Database) -> tuple[report.ScopeReport, calibration.assessment.Assessment]:
    return report.assess(db, store.find_judge_run(db, RUN), bootstrap=0)


def test_closing_labeling_turns_an_undecided_run_below_the_target_into_revise(
    below_target_db: Database,
) -> None:
    db = below_target_db
    before, open_assessment = _assess(db)
    assert before.report.estimates is not None and before.report.estimates.agreement.ci_high < 0.85
    assert open_assessment.status == "inconclusive" and open_assessment.closed is None
    assert before.report.to_dict()["labeling_closed"] is None

    closure = closing.close_labeling(db, RUN, closed_by=LEAD)
    assert store.labeling_closure(db, closure.run_id) == closure
    day = closure.closed_at[:10]
    after, assessed = _assess(db)
    assert (assessed.status, assessed.reading) == ("revise", "final")
    assert (
        after.report.flag.reading_sentence
        == f"decided at the final reading: labeling closed by {LEAD} on {day}"
    )
    reason = next(r for r in after.report.flag.reasons if r.code == "agreement_below_target")
    assert f"at the final reading: labeling closed by {LEAD} on {day}" in reason.message
    assert "of the 800 claims labeled at closing (one-sided 97.5%) lies below it" in reason.message
    assert f"verdict revise at the final reading (labeling closed by {LEAD} on {day})" in assessed.line()

    stats = report.stats_json(after, assessed, None)
    assert stats["labeling_closed"]["closed_by"] == LEAD
    assert stats["labeling_closed"]["final_reading"]["n_claims"] == 800
    assert stats["assessment"]["labeling_closed"] == f"labeling closed by {LEAD} on {day}"
    assert stats["agreement"]["rule"]["labeling_ended"] == f"labeling closed by {LEAD} on {day}"

    dash = dashboard.build(db, run=RUN, bootstrap=0)
    assert dash.decision is not None and dash.decision.status == "revise"
    assert dash.decision.reading == f"final reading (labeling closed by {LEAD} on {day})"
    assert f"Decided at the final reading (labeling closed by {LEAD} on {day})" in dash.decision.sentence
    assert not {s.kind for s in dash.decision.steps} & {"plan", "import"}  # nothing more to draw


def test_labels_given_after_closing_move_the_figures_but_not_the_final_reading(
    below_target_db: Database, tmp_path: Path
) -> None:
    db = below_target_db
    taken = closing.close_labeling(db, RUN, closed_by=LEAD).reading["agreement"]
    # The reviewers finish: every remaining answer agrees with the judge.
    rest = [(f"v1-a{800 + i:04d}", "SUPPORTED") for i in range(UNLABELED)]
    import_labels(db, _labels(tmp_path / "rest.csv", rest))
    after, assessed = _assess(db)
    assert after.report.n_claims == 820
    rule = after.report._rule("agreement")
    assert rule is not None and (rule.final_low, rule.final_high) == tuple(taken)
    assert after.report.estimates is not None and after.report.estimates.agreement.ci_high > taken[1]
    assert (assessed.status, assessed.reading) == ("revise", "final")


def test_a_closed_run_draws_no_new_cycle(below_target_db: Database) -> None:
    db = below_target_db
    assert cycles.next_cycle(db, RUN).answers_left == UNLABELED
    closing.close_labeling(db, RUN, closed_by=LEAD)
    refusal = f"Labeling closed by {LEAD} on .* for run {RUN}: no new cycle is drawn from it"
    with pytest.raises(ConflictError, match=refusal):
        cycles.create_cycle(db, name="more", judge_run=RUN, size=15, force=True)
    with pytest.raises(ConflictError, match=refusal):
        cycles.plan_next(db, judge_run=RUN, size=15)
    assert cycles.list_cycles(db) == []
    nxt = cycles.next_cycle(db, RUN)
    assert nxt.answers_left == 0 and nxt.closed is not None and "no new cycle" in nxt.closed


def test_closing_is_refused_twice_without_a_name_and_without_labels(
    below_target_db: Database, tmp_path: Path
) -> None:
    db = below_target_db
    with pytest.raises(InputError, match="name the lead"):
        closing.close_labeling(db, RUN, closed_by="  ")
    import_answers(db, _answers(tmp_path / "v2.jsonl", ["SUPPORTED"] * 3, version="v2"))
    with pytest.raises(InputError, match="nothing to read"):
        closing.close_labeling(db, "m@v2", closed_by=LEAD)
    assert store.labeling_closure(db, store.find_judge_run(db, "m@v2").id) is None
    first = closing.close_labeling(db, RUN, closed_by=LEAD)
    with pytest.raises(ConflictError, match=f"run {RUN}: labeling closed by {LEAD} on .* already"):
        closing.close_labeling(db, RUN, closed_by="Someone Else")
    assert store.labeling_closure(db, first.run_id) == first


def test_the_cli_closes_labeling_only_when_told_yes(run_cli: RunCli, db_path: Path) -> None:
    run_cli("demo", db=db_path, expect=0)
    asked = run_cli("close-labeling", "wice-gpt4", "--by", LEAD, db=db_path, expect=2)
    assert "closing is one way, so add --yes" in asked.stderr
    assert (
        json.loads(run_cli("stats", "--judge-run", "wice-gpt4", "--json", db=db_path).stdout)[
            "labeling_closed"
        ]
        is None
    )
    done = run_cli("close-labeling", "wice-gpt4", "--by", LEAD, "--yes", db=db_path, expect=0)
    assert (
        f"Labeling closed by {LEAD} on " in done.stdout
        and "flag: REVISE at the final reading (" in done.stdout
    )
    stats = json.loads(run_cli("stats", "--judge-run", "wice-gpt4", "--json", db=db_path, expect=0).stdout)
    assert stats["labeling_closed"]["closed_by"] == LEAD
    assert stats["assessment"]["labeling_closed"].startswith(f"labeling closed by {LEAD} on ")
    again = run_cli("close-labeling", "wice-gpt4", "--by", "Bo", "--yes", db=db_path, expect=1)
    assert "already; closing is one way" in again.stderr
    refused = run_cli("cycle", "create", "--name", "late", "--judge-run", "wice-gpt4", db=db_path, expect=1)
    assert "no new cycle is drawn from it" in refused.stderr


def test_the_api_closes_labeling(db_path: Path, run_cli: RunCli) -> None:
    run_cli("demo", db=db_path, expect=0)
    with calibration.connect(db_path) as cal:
        closed = cal.close_labeling("wice-gpt4", closed_by=LEAD)
        assert closed.closed_by == LEAD
        assert cal.stats("wice-gpt4")["labeling_closed"]["closed_at"] == closed.closed_at
