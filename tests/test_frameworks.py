"""Golden sets for DeepEval, Ragas and Langfuse, loaded with each framework's own classes.

The frameworks live in a venv of their own (`make frameworks`); the loader runs there and says
what it loaded (tests/frameworks/load_golden.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from calibration import export, frameworks
from calibration.store import Database

from .conftest import ROOT

FRAMEWORKS_PYTHON = ROOT / ".venv-frameworks" / "bin" / "python"
LOADER = ROOT / "tests" / "frameworks" / "load_golden.py"


def _frameworks_python() -> Path:
    if FRAMEWORKS_PYTHON.is_file():
        return FRAMEWORKS_PYTHON
    message = f"no frameworks venv at {FRAMEWORKS_PYTHON}: run `make frameworks`"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI loads the exports for real: never a silent skip
    pytest.skip(message)


def _load(fmt: str, path: Path) -> dict:
    env = {
        **os.environ,
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
        "DO_NOT_TRACK": "1",
        "LANGFUSE_TRACING_ENABLED": "false",
    }
    done = subprocess.run(
        [str(_frameworks_python()), str(LOADER), fmt, str(path)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("fmt", frameworks.FORMATS)
def test_the_frameworks_load_the_wice_golden_set_whole(wice_db: Database, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / export.file_name(fmt, judge_run="wice-gpt4", cycle=None, day="2026-12-07")
    report = export.export(wice_db, out, fmt=fmt, judge_run="wice-gpt4")
    counts = report.framework
    assert counts is not None and counts.items == 100  # every labeled answer, negatives included
    loaded = _load(fmt, out)
    assert loaded["items"] == counts.items  # the count equals the export's summary
    assert loaded["complete"] == counts.items  # question, answer, chunks and claims in every item
    assert loaded["chunk_text"] == counts.items
    assert loaded["negatives"] == counts.negatives == 78  # answers with a claim humans did not support
    assert loaded["verdicts"] == ["SUPPORTED", "UNSUPPORTED"]


def test_items_carry_provenance_and_a_content_version(wice_db: Database, tmp_path: Path) -> None:
    first = export.export(wice_db, tmp_path / "a.jsonl", fmt="langfuse", judge_run="wice-gpt4")
    again = export.export(wice_db, tmp_path / "b.jsonl", fmt="langfuse", judge_run="wice-gpt4")
    assert first.framework is not None and again.framework is not None
    assert first.framework.content_version == again.framework.content_version  # same items, same version
    line = json.loads((tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()[0])
    meta = line["metadata"]
    assert meta["content_version"] == first.framework.content_version
    assert (
        meta["judge_runs"] == ["gpt-4-0613@wice-gpt4"] and meta["answer_id"] == line["metadata"]["answer_id"]
    )
    (claim,) = meta["claims"]
    assert claim["reviewers"] == ["wice-annotators"] and claim["decided"] and claim["expected_verdict"]
    assert first.framework.no_evidence == 100  # the WiCE labels cite no chunk: the export says so
    assert any("hold a claim without evidence" in x for x in first.lines())
