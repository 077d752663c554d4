"""An import is all or nothing for readers too: while its rows move in by short writes no reader
sees any of them, and a process killed in the middle leaves, after recovery, the database as it
was before the import began."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import literal_column, true
from sqlalchemy.dialects import sqlite

from calibration import store
from calibration.cli import main
from calibration.importing import import_answers
from calibration.store import Database
from calibration.store import answers as answer_store
from calibration.store import exports as export_store
from calibration.store import imports as import_marks

ROOT = Path(__file__).resolve().parents[1]
CONTENT_TABLES = ("answers", "chunks", "claims", "judge_runs", "judge_verdicts", "answer_checks")


def _record(aid: str, model: str, claims: int = 3, **over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": aid,
        "question": f"Question {aid}?",
        "answer": f"Answer {aid}.",
        "category": "k",
        "judge_model": model,
        "judge_prompt_version": "v1",
        "chunks": [{"id": "k1", "text": f"chunk of {aid}"}],
        "claims": [
            {"id": f"c{j}", "claim": f"Claim {j} of {aid}.", "verdict": "SUPPORTED"} for j in range(claims)
        ],
    }
    rec.update(over)
    return rec


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def base_file(tmp_path: Path) -> Path:
    """Ten answers judged by run base@v1."""
    return _write(tmp_path / "base.jsonl", [_record(f"old{i}", "base") for i in range(10)])


@pytest.fixture
def big_file(tmp_path: Path) -> Path:
    """Many batches of new answers under the existing run, the old answers judged again by a new
    run, a claim added to an old answer and a changed category (the rows that land last)."""
    recs = [_record(f"new{i}", "base") for i in range(1500)]
    recs += [_record(f"old{i}", "second") for i in range(2, 10)]
    recs.append(_record("old0", "base", claims=4))  # c3 is new on an answer already stored
    recs.append(_record("old1", "base", category="changed"))
    return _write(tmp_path / "big.jsonl", recs)


def _dump(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every content row, sorted: what 'the database before the import' means here."""
    return {
        t: sorted(map(tuple, db.execute(f"SELECT * FROM {t}").fetchall()), key=repr) for t in CONTENT_TABLES
    }


def _seen(db: Database) -> dict[str, Any]:
    """What the readers show: overview counts, runs, a run's claim table, the export's claims."""
    base = store.find_judge_run(db, "base@v1")
    table = store.claim_table(db, base.id)
    return {
        "info": store.info(db),
        "runs": [r.name for r in store.judge_runs(db)],
        "claims": table.claim_pk.tolist(),
        "answers": table.answer_ids,
        "export": export_store.claim_ids_in_scope(db),
        "run_verdicts": store.run_verdicts(db, base.id)[0].tolist(),
    }


def test_readers_see_nothing_of_an_import_until_its_last_write(
    db_path: Path, base_file: Path, big_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.session(db_path) as db:
        import_answers(db, base_file)
    with store.session(db_path) as reader:
        before = _seen(reader)
        raw_before = reader.execute("SELECT count(*) FROM claims").fetchone()[0]
    pauses: list[tuple[dict[str, Any], int]] = []

    def read_between_batches() -> None:
        with store.session(db_path) as other:  # another connection, as the app's pages are
            pauses.append((_seen(other), other.execute("SELECT count(*) FROM claims").fetchone()[0]))

    monkeypatch.setattr(answer_store, "pause_between_batches", read_between_batches)
    with store.session(db_path) as db:
        rep = import_answers(db, big_file, update=True)
    assert rep.answers_new == 1500 and rep.answers_updated == 1
    assert len(pauses) >= 4  # answers, chunks, claims and verdicts each took a batch or more
    assert all(seen == before for seen, _ in pauses)
    assert max(raw for _, raw in pauses) > raw_before  # rows really were in the tables meanwhile
    with store.session(db_path) as db:
        after = _seen(db)
        assert after["runs"] == ["base@v1", "second@v1"]
        assert after["info"]["totals"]["answers"] == 1510
        assert after["info"]["totals"]["claims"] == 30 + 4500 + 1
        assert db.execute("SELECT category FROM answers WHERE id = 'old1'").fetchone()[0] == "changed"
        assert db.execute("SELECT status FROM imports ORDER BY id").fetchall() == [("done",), ("done",)]


def _cli(db_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "calibration", "--db", str(db_path), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _kill_while_publishing(db_path: Path, path: Path) -> None:
    """Run `import` in a process that sleeps after each batch; SIGKILL it once a batch is in."""
    with store.session(db_path) as db:
        n0 = db.execute("SELECT count(*) FROM answers").fetchone()[0]
    proc = _cli(db_path, "import", str(path), "--update", env={"CALIBRATION_PUBLISH_PAUSE": "0.3"})
    deadline = time.monotonic() + 60
    with store.session(db_path) as db:
        while db.execute("SELECT count(*) FROM answers").fetchone()[0] == n0:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow
def test_a_killed_import_is_hidden_then_removed_to_the_byte(
    db_path: Path, base_file: Path, big_file: Path
) -> None:
    with store.session(db_path) as db:
        import_answers(db, base_file)
        before, seen_before = _dump(db), _seen(db)
    _kill_while_publishing(db_path, big_file)
    with store.session(db_path) as db:
        assert _dump(db) != before  # part of the file is in the tables
        assert _seen(db) == seen_before  # and no reader shows it
        messages = import_marks.recover(db)
        assert len(messages) == 1 and "did not finish" in messages[0] and "big.jsonl" in messages[0]
        assert _dump(db) == before
        assert db.execute("SELECT count(*) FROM imports").fetchone()[0] == 1  # the base import's
        assert import_marks.recover(db) == []  # nothing left to do


@pytest.mark.slow
def test_the_next_cli_import_removes_the_leftovers_and_succeeds(
    db_path: Path, base_file: Path, big_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with store.session(db_path) as db:
        import_answers(db, base_file)

    def stats() -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["--db", str(db_path), "stats", "--json", "--judge-run", "base@v1", "--bootstrap", "0"])
        return (code, *capsys.readouterr())

    stats_before = stats()
    _kill_while_publishing(db_path, big_file)
    assert stats() == stats_before
    out, err = _cli(db_path, "import", str(big_file), "--update").communicate()
    assert "Traceback" not in out + err, err
    assert "did not finish" in out and "was removed" in out
    assert "answers: 1500 new, 10 already present (1 with category or metadata updated)" in out
    with store.session(db_path) as db:
        assert store.info(db)["totals"]["claims"] == 30 + 4500 + 1
        assert db.execute("SELECT status FROM imports").fetchall() == [("done",), ("done",)]


@pytest.mark.slow
def test_a_live_import_is_not_mistaken_for_a_leftover(db_path: Path, base_file: Path, big_file: Path) -> None:
    with store.session(db_path) as db:
        import_answers(db, base_file)
    proc = _cli(db_path, "import", str(big_file), "--update", env={"CALIBRATION_PUBLISH_PAUSE": "0.3"})
    try:
        with store.session(db_path) as db:
            deadline = time.monotonic() + 60
            while not db.execute("SELECT 1 FROM imports WHERE status = 'publishing'").fetchone():
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.02)
            assert import_marks.recover(db) == []
    finally:
        out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "answers: 1500 new" in out


def test_a_failure_in_the_last_write_takes_everything_back(
    db_path: Path, base_file: Path, big_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.session(db_path) as db:
        import_answers(db, base_file)
        before = _dump(db)

    def failing_finish(self: answer_store.Staging) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(answer_store.Staging, "finish", failing_finish)
    with store.session(db_path) as db:
        with pytest.raises(OSError):
            import_answers(db, big_file, update=True)
        assert _dump(db) == before
        assert db.execute("SELECT count(*) FROM imports WHERE status = 'publishing'").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("pending", "expected"),
    [
        ([], None),
        ([(5, 9, [2])], "c.id NOT BETWEEN 5 AND 9 AND (r NOT IN (2)) AND (s NOT IN ('T'))"),
        ([(None, None, [])], "(s NOT IN ('T'))"),
    ],
)
def test_hidden_names_exactly_the_unfinished_rows(
    fresh_db: Database, pending: list[tuple[Any, ...]], expected: str | None
) -> None:
    for i, (lo, hi, runs) in enumerate(pending):
        fresh_db.execute(
            "INSERT INTO imports (status, stamp, new_runs, claim_lo, claim_hi, pid, host, "
            "started_at) VALUES ('publishing', :stamp, :new_runs, :claim_lo, :claim_hi, 1, 'h', 't')",
            {
                "stamp": "T" if i == 0 else f"T{i}",
                "new_runs": json.dumps(runs),
                "claim_lo": lo,
                "claim_hi": hi,
            },
        )
    fresh_db.execute(
        "INSERT INTO imports (status, stamp, claim_lo, claim_hi, pid, host, started_at) "
        "VALUES ('done', 'D', 1, 100, 1, 'h', 't')"
    )  # finished: hides nothing
    columns = {"claim": "c.id", "run": "r", "answer_stamp": "s"}
    condition = import_marks.hidden(fresh_db, **{k: literal_column(v) for k, v in columns.items()})
    if expected is None:  # nothing unfinished: a condition that costs nothing
        assert condition.compare(true())
    else:
        written = condition.compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True})
        assert str(written) == expected
