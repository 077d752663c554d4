"""MLflow both ways, against a real tracking server (`mlflow server` on a local SQLite store):
traces a judge assessed come in as a judge run, and the reviewers' final labels go back as human
assessments that MLflow's own client reads under the judge's assessment name."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from calibration import split, store
from calibration.cli import main
from calibration.judge.compare import compare_runs
from calibration.store import Database

from .browser.conftest import free_port
from .helpers import wait_healthy
from .test_frameworks import FRAMEWORKS_PYTHON, _frameworks_python

CLIENT = Path(__file__).parent / "frameworks" / "mlflow_client.py"
RUN = "gpt-4o@groundedness"


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[str]:
    """A tracking server of its own on 127.0.0.1 with three judged traces logged through MLflow's
    client (one per test: a test writes assessments to it)."""
    python = _frameworks_python()
    root = tmp_path / "mlflow"
    root.mkdir()
    port = free_port()
    log = root / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [
                str(python.parent / "mlflow"),
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--backend-store-uri",
                f"sqlite:///{root / 'mlflow.db'}",
                "--default-artifact-root",
                str(root / "artifacts"),
                "--workers",
                "1",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_healthy(port, server, lambda: log.read_text(errors="replace"), timeout_s=180, health="/health")
        uri = f"http://127.0.0.1:{port}"
        _client("log", uri)
        yield uri
    finally:
        server.terminate()
        server.wait(timeout=60)


def _client(command: str, uri: str) -> str:
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "GIT_PYTHON_REFRESH": "quiet"}
    done = subprocess.run(
        [str(FRAMEWORKS_PYTHON), str(CLIENT), command, uri], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _import(db_url: str | Path, server: str, assessment: str) -> None:
    source = ["--from", "mlflow", "--tracking-uri", server, "--experiment", "rag"]
    assert main(["--db", str(db_url), "import", *source, "--assessment", assessment]) == 0


def _review(db: Database, claims: list[tuple[int, str, str]]) -> None:
    """The reviewer: the 1999 opening is not supported; everything else is as the judge said."""
    for pk, text, verdict in claims:
        human = "UNSUPPORTED" if "1999" in text else verdict
        store.record_label(db, claim=pk, reviewer="anna", kind="import", verdict=human)


def _claims(db: Database) -> list[tuple[int, str, str]]:
    """(claim id, text, the first judge's verdict) of every claim, in id order."""
    run = store.find_judge_run(db, RUN)
    return db.execute(
        "SELECT c.id, c.text, v.verdict FROM claims c JOIN judge_verdicts v ON v.claim_pk = c.id "
        "WHERE v.run_id = :run_id ORDER BY c.id",
        {"run_id": run.id},
    ).fetchall()


@pytest.mark.slow
def test_traces_come_in_and_human_assessments_go_back(
    mlflow_server: str, fresh_db: Database, db_url: str | Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import(db_url, mlflow_server, "groundedness")
    out = capsys.readouterr().out
    assert "1 trace judged claim by claim, 2 traces judged as a whole answer" in out
    answers = [a for (a,) in fresh_db.execute("SELECT id FROM answers ORDER BY id")]
    assert len(answers) == 3 and all(a.startswith("tr-") for a in answers)
    claims = _claims(fresh_db)
    assert len(claims) == 4  # two answers as one claim each, the claim-level answer's two claims
    chunks = {text for (text,) in fresh_db.execute("SELECT text FROM chunks")}
    assert "The Louvre, in Paris, opened in 1793." in chunks  # the retriever span's document
    _review(fresh_db, claims)
    assert main(["--db", str(db_url), "export", "--format", "mlflow", "--tracking-uri", mlflow_server]) == 0
    assert "human assessments written to 3 traces" in capsys.readouterr().out
    human = [a for a in json.loads(_client("read", mlflow_server)) if a["source_type"].endswith("HUMAN")]
    assert len(human) == 3 and {a["name"] for a in human} == {"groundedness"}
    assert {a["source_id"] for a in human} == {"anna"}
    values = sorted(json.dumps(a["value"], sort_keys=True) for a in human)
    assert values == sorted(
        [
            json.dumps("yes"),  # the judge's own words, not verdict names, wherever it used them
            json.dumps("no"),
            json.dumps(
                [
                    {"claim": "The Louvre is in Paris.", "verdict": "yes"},
                    {"claim": "It opened in 1999.", "verdict": "no"},
                ],
                sort_keys=True,
            ),
        ]
    )


@pytest.mark.slow
def test_an_aligned_judge_comes_in_as_a_new_run_and_is_proved_on_the_sealed_holdout(
    mlflow_server: str, fresh_db: Database, db_url: str | Path
) -> None:
    _import(db_url, mlflow_server, "groundedness")
    _review(fresh_db, _claims(fresh_db))
    split.seal(fresh_db, created_by="lead", holdout_share=0.5)  # before the aligned judge is seen
    _client("align", mlflow_server)
    _import(db_url, mlflow_server, "groundedness_aligned")
    old = store.find_judge_run(fresh_db, RUN)
    aligned = store.find_judge_run(fresh_db, "gpt-4o-aligned@groundedness_aligned")
    found = compare_runs(fresh_db, aligned, old)
    assert found is not None and found.result.n_claims == 4  # the same claims, paired
    assert len(found.result.only_b_right) == 1 and not found.result.only_a_right  # the 1999 claim
    parts = [p for p in (found.holdout, found.tuning) if p is not None]
    assert sum(p.result.n_claims for p in parts) == 4 and found.holdout is not None


def test_import_from_mlflow_says_what_it_needs(fresh_db: Database, db_url: str | Path, capsys) -> None:
    assert main(["--db", str(db_url), "import", "--from", "mlflow", "--experiment", "rag"]) == 1
    assert "--from mlflow needs --tracking-uri, --assessment" in capsys.readouterr().err
    assert main(["--db", str(db_url), "export", "--format", "mlflow"]) == 1
    assert "--format mlflow needs --tracking-uri URL" in capsys.readouterr().err
    nobody = ["--tracking-uri", f"http://127.0.0.1:{free_port()}", "--experiment", "rag", "--assessment", "g"]
    assert main(["--db", str(db_url), "import", "--from", "mlflow", *nobody]) == 1
    (line,) = capsys.readouterr().err.splitlines()  # one line, no traceback
    assert line.startswith("error: MLflow tracking server http://127.0.0.1:")
