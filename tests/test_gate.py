"""`stats --fail-on` and `--junit`: the judge check as a CI gate, on imported runs whose flag is known."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from calibration import gate, store
from calibration.cli import main
from calibration.flag import Flag, Reason
from calibration.importing import import_answers
from calibration.store import Database

from .conftest import ROOT

VERDICTS = ("SUPPORTED", "UNSUPPORTED")


def _judged_run(
    db: Database, tmp_path: Path, version: str, answers: str, pairs: list[tuple[int, int]]
) -> None:
    """One claim per answer `{answers}-{i}`, judged by run m@`version` and labeled: `pairs` of
    (human, judge) indices into VERDICTS."""
    src = tmp_path / f"{version}.jsonl"
    src.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"{answers}-{i:03d}",
                    "question": "q",
                    "answer": "a",
                    "judge_model": "m",
                    "judge_prompt_version": version,
                    "chunks": [{"id": "S1", "text": "t"}],
                    "claims": [{"id": "c1", "claim": "x", "verdict": VERDICTS[judge]}],
                }
            )
            + "\n"
            for i, (_human, judge) in enumerate(pairs)
        ),
        encoding="utf-8",
    )
    import_answers(db, src)
    for i, (human, _judge) in enumerate(pairs):
        claim = store.claim_pk(db, f"{answers}-{i:03d}", "c1")
        store.record_label(db, claim=claim, reviewer="ann", kind="import", verdict=VERDICTS[human])


@pytest.fixture
def gated_db(fresh_db: Database, tmp_path: Path) -> Database:
    """Three runs: on the same 300 claims `good` agrees with every human label (ok) and `bad`
    calls them all SUPPORTED (lenient on half: revise); `few` judged 4 other claims (inconclusive)."""
    human = [i % 2 for i in range(300)]
    _judged_run(fresh_db, tmp_path, "good", "a", [(h, h) for h in human])
    _judged_run(fresh_db, tmp_path, "bad", "a", [(h, 0) for h in human])
    _judged_run(fresh_db, tmp_path, "few", "f", [(0, 0)] * 4)
    return fresh_db


def _stats(db_url: str | Path, *extra: str) -> int:
    return main(["--db", str(db_url), "stats", "--bootstrap", "0", *extra])


@pytest.mark.parametrize(
    ("run", "status", "fails"),
    [("m@good", "OK", 0), ("m@bad", "REVISE", 1), ("m@few", "INCONCLUSIVE", 0)],
)
def test_fail_on_revise_fails_only_a_revise_flag(gated_db, db_url, capsys, run, status, fails):
    assert _stats(db_url, "--judge-run", run, "--fail-on", "revise") == fails
    out, err = capsys.readouterr()
    assert f"Flag: {status}" in out
    if fails:
        (line,) = err.splitlines()  # one line saying why
        assert line.startswith(
            f"error: judge check failed: judge run {run} (every claim of the run) is REVISE: "
        )
    else:
        assert err == ""


def test_fail_on_both_statuses_fails_an_inconclusive_flag_too(gated_db, db_url, capsys):
    assert _stats(db_url, "--judge-run", "m@few", "--fail-on", "revise", "--fail-on", "inconclusive") == 1
    assert "is INCONCLUSIVE" in capsys.readouterr().err
    assert _stats(db_url, "--judge-run", "m@good", "--fail-on", "revise", "--fail-on", "inconclusive") == 0


def test_the_gate_works_with_json_output(gated_db, db_url, capsys):
    assert _stats(db_url, "--judge-run", "m@bad", "--json", "--fail-on", "revise") == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["flag"]["status"] == "revise"  # stdout stays one JSON object
    assert err.startswith("error: judge check failed")


def test_an_unknown_status_is_a_usage_error(gated_db, db_url, capsys):
    with pytest.raises(SystemExit) as exit_:
        _stats(db_url, "--fail-on", "ok")
    assert exit_.value.code == 2


@pytest.mark.parametrize(("run", "failures"), [("m@bad", 1), ("m@good", 0)])
def test_junit_report_holds_the_decision(gated_db, db_url, capsys, tmp_path, run, failures):
    report = tmp_path / "out" / "judge.xml"
    assert _stats(db_url, "--judge-run", run, "--fail-on", "revise", "--junit", str(report)) == failures
    root = ET.parse(report).getroot()
    (case,) = root.iter("testcase")
    assert root.get("failures") == str(failures)
    assert case.get("name") == f"judge run {run} (every claim of the run)"
    assert "Flag: " in (case.findtext("system-out") or "")
    found = case.find("failure")
    assert (found is not None) == bool(failures)
    if found is not None:
        assert found.get("type") == "revise" and "is REVISE" in (found.get("message") or "")


def test_junit_alone_never_fails(gated_db, db_url, capsys, tmp_path):
    report = tmp_path / "judge.xml"
    assert _stats(db_url, "--judge-run", "m@bad", "--junit", str(report)) == 0
    assert ET.parse(report).getroot().get("failures") == "0"


def test_junit_into_a_missing_folder_it_cannot_make_is_one_line(gated_db, db_url, capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    assert _stats(db_url, "--judge-run", "m@good", "--junit", str(blocker / "judge.xml")) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and "Traceback" not in line


def test_check_names_the_first_rule_that_fired_and_keeps_xml_valid():
    reasons = (
        Reason("human_ceiling", "information only", None, ()),
        Reason("judge_lenient", "the judge is lenient", 0.1, ("a/c1",)),
    )
    failed = gate.check(Flag("revise", reasons), ["revise"], subject="run \x01x")
    assert failed.failed and failed.line.endswith("is REVISE: the judge is lenient")
    passed = gate.check(Flag("revise", reasons), ["inconclusive"], subject="run")
    assert not passed.failed and passed.line == "judge check passed: run is REVISE"
    xml = gate.junit_xml(failed, suite="s", case="run \x01x", details="report \x00 text")
    case = ET.fromstring(xml).find("testsuite/testcase")
    assert case is not None and case.get("name") == "run \ufffdx"


# ---------------------------------------------------------------- the CI job of the docs

WORKFLOW = ROOT / "docs" / "ci" / "judge-check.yml"


def _job_script() -> str:
    """The shell block of the workflow's "Judge check" step, as a runner would execute it."""
    lines = WORKFLOW.read_text(encoding="utf-8").splitlines()
    start = lines.index("      - name: Judge check") + 2
    assert lines[start - 1].strip() == "run: |"
    block = []
    for line in lines[start:]:
        if not line.startswith("          "):
            break
        block.append(line[10:])
    return "\n".join(block) + "\n"


@pytest.fixture
def team_backup(tmp_path: Path) -> Path:
    """A team's backup: the gpt-4 WiCE run (the baseline) with the human labels, and nothing else."""
    db, out = tmp_path / "team.db", tmp_path / "backup.jsonl"
    for args in (
        ["import", str(ROOT / "data/wice/wice_judged_gpt4.jsonl")],
        ["import-labels", str(ROOT / "data/wice/wice_human_labels.csv")],
        ["backup", "--out", str(out)],
    ):
        assert main(["--db", str(db), *args]) == 0
    return out


def _run_job(tmp_path: Path, backup: Path, new_file: Path, new_run: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "BACKUP": str(backup),
        "NEW_RUN_FILE": str(new_file),
        "NEW_RUN": new_run,
        "BASELINE_RUN": "gpt-4-0613@wice-gpt4",
    }
    env.pop("CALIBRATION_DB", None)
    work = tmp_path / "ci"
    work.mkdir(parents=True)
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", _job_script()], cwd=work, env=env, capture_output=True, text=True
    )


@pytest.mark.slow
def test_the_ci_job_fails_a_worse_run_and_passes_a_run_as_good(team_backup, tmp_path, capsys):
    worse = _run_job(tmp_path / "a", team_backup, ROOT / "data/wice/wice_judged_gpt35.jsonl", "wice-gpt35")
    assert worse.returncode == 1, worse.stderr
    (line,) = [x for x in worse.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith(
        "error: judge check failed: judge run gpt-3.5-turbo-0613@wice-gpt35 (every claim of the run) "
        "is worse than gpt-4-0613@wice-gpt4: On 100 claims"
    )
    report = ET.parse(tmp_path / "a" / "ci" / "judge-check.xml").getroot()
    assert report.get("failures") == "1"
    # The same verdicts under a new prompt version: no worse, so the job passes (its flag is
    # revise, as the baseline's is, and this job gates on the comparison alone).
    same = tmp_path / "same.jsonl"
    same.write_text(
        (ROOT / "data/wice/wice_judged_gpt4.jsonl")
        .read_text(encoding="utf-8")
        .replace('"judge_prompt_version": "wice-gpt4"', '"judge_prompt_version": "wice-gpt4-again"'),
        encoding="utf-8",
    )
    passed = _run_job(tmp_path / "b", team_backup, same, "wice-gpt4-again")
    assert passed.returncode == 0, passed.stderr
    assert "Compared with gpt-4-0613@wice-gpt4: On 100 claims" in passed.stdout
    assert "The difference could be noise." in passed.stdout


def test_fail_on_worse_without_a_baseline_is_refused(gated_db, db_url, capsys):
    assert _stats(db_url, "--judge-run", "m@bad", "--fail-on", "worse") == 1
    assert "--fail-on worse needs --compare-with RUN" in capsys.readouterr().err


def test_worse_fails_only_when_beyond_chance(gated_db, db_url, capsys):
    assert _stats(db_url, "--judge-run", "m@good", "--compare-with", "m@bad", "--fail-on", "worse") == 0
    assert "m@good is better beyond chance" in capsys.readouterr().out
    assert _stats(db_url, "--judge-run", "m@bad", "--compare-with", "m@good", "--fail-on", "worse") == 1
    assert "is worse than m@good: On " in capsys.readouterr().err
    # No claim judged by both runs: the gate cannot check, so it does not pass.
    assert _stats(db_url, "--judge-run", "m@few", "--compare-with", "m@good", "--fail-on", "worse") == 1
    assert "cannot be compared with m@good" in capsys.readouterr().err
