"""A large label import does not block reviewers and is all or nothing for readers: the CSV is read
and checked without the write lock, the labels move in by short writes that no reader sees until
the last one, and a process killed in the middle leaves, after recovery, the database as before."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from calibration import cycles, dashboard, review, store
from calibration.importing import import_answers, import_labels
from calibration.store import Database
from calibration.store import cycles as cycle_store
from calibration.store import exports as export_store
from calibration.store import imports as import_marks
from calibration.store import labels as label_store
from calibration.vocab import Verdict

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_PER_ANSWER = 3
CONTENT_TABLES = (
    "answers",
    "chunks",
    "claims",
    "judge_runs",
    "judge_verdicts",
    "label_events",
    "human_labels",
    "answer_reveals",
    "adjudications",
)
VERDICTS = ("SUPPORTED", "CONTRADICTED", "UNSUPPORTED")


def _answers_file(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(
                json.dumps(
                    {
                        "id": f"a{i}",
                        "question": f"Question {i}?",
                        "answer": f"Answer {i}.",
                        "judge_model": "m",
                        "judge_prompt_version": "v1",
                        "chunks": [{"id": "k1", "text": "t"}],
                        "claims": [
                            {"id": f"c{j}", "claim": f"Claim {j} of {i}.", "verdict": "SUPPORTED"}
                            for j in range(CLAIMS_PER_ANSWER)
                        ],
                    }
                )
                + "\n"
            )
    return path


def _labels_file(path: Path, answers: range, reviewer: str = "nina") -> Path:
    lines = ["answer_id,claim_id,verdict,reviewer"]
    lines += [
        f"a{i},c{j},{VERDICTS[(i + j) % 3]},{reviewer}" for i in answers for j in range(CLAIMS_PER_ANSWER)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _database(db_path: Path, tmp_path: Path, answers: int) -> None:
    """`answers` answers of three claims judged by run m@v1, one label of vera's on a0/c0, an open
    cycle over ten answers, and nina's own verdict (review page) on a0/c1."""
    with store.session(db_path) as db:
        import_answers(db, _answers_file(tmp_path / "answers.jsonl", answers))
        store.record_label(
            db, claim=store.claim_pk(db, "a0", "c0"), reviewer="vera", kind="import", verdict="SUPPORTED"
        )
        store.record_label(
            db, claim=store.claim_pk(db, "a0", "c1"), reviewer="nina", kind="blind", verdict="SUPPORTED"
        )
        cycles.create_cycle(
            db,
            name="week1",
            judge_run="m@v1",
            size=10,
            seed=1,
            reviewers=[],
            overlap=0.0,
            force=True,
            created_by="lead",
        )


def _dump(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every content row, sorted: what 'the database before the import' means here."""
    return {
        t: sorted(map(tuple, db.execute(f"SELECT * FROM {t}").fetchall()), key=repr) for t in CONTENT_TABLES
    }


def _seen(db: Database) -> dict[str, Any]:
    """What the readers show: the claim table and the stats, the dashboard's reviewer counts,
    the overview counts, the lead's cycle progress, a reviewer's progress and card, an export."""
    run = store.find_judge_run(db, "m@v1")
    table = store.claim_table(db, run.id)
    cycle_id = store.cycle_id(db, "week1")
    work = cycle_store.cycle_work(db, cycle_id)
    return {
        "labels": (table.labels.claim_pk.tolist(), table.labels.final.tolist()),
        "human": table.human.tolist(),
        "stats": store.stats_columns(db, run.id).human.tolist(),
        "reviewers": dashboard.reviewer_rows_of(table.labels),
        "totals": store.info(db)["totals"],
        "cycle": (sorted(work.labels), sorted(work.committed)),
        "progress": review.progress(db, cycle_id, "nina"),
        "nina_a1": review.load_card(db, "a1", "nina"),
        "export": export_store.claim_details(db, [store.claim_pk(db, "a1", f"c{j}") for j in range(3)]),
    }


# ---------------------------------------------------------------- readers between batches


def test_readers_between_batches_see_none_of_the_new_labels(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _database(db_path, tmp_path, 700)
    path = _labels_file(tmp_path / "labels.csv", range(700))
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("a0,c0,CONTRADICTED,vera\n")  # replaces a label already stored: lands last
    with store.session(db_path) as db:
        before, raw_before = _seen(db), db.execute("SELECT count(*) FROM human_labels").fetchone()[0]
    pauses: list[tuple[dict[str, Any], int]] = []

    def read_between_batches() -> None:
        with store.session(db_path) as other:  # another connection, as the app's pages are
            pauses.append((_seen(other), other.execute("SELECT count(*) FROM human_labels").fetchone()[0]))

    monkeypatch.setattr(label_store, "pause_between_batches", read_between_batches)
    with store.session(db_path) as db:
        rep = import_labels(db, path)
    assert rep.new == 2101  # with a0/c1 (nina gave SUPPORTED on the review page) and vera's a0/c0
    assert len(pauses) >= 4
    assert all(seen == before for seen, _ in pauses)
    assert max(raw for _, raw in pauses) > raw_before  # the labels really were in the table meanwhile
    with store.session(db_path) as db:
        after = _seen(db)
        assert after["totals"]["labeled_claims"] == 2100
        assert {r.reviewer: r.labeled for r in after["reviewers"]} == {"nina": 2100, "vera": 1}
        assert store.label_state(db, store.claim_pk(db, "a0", "c0"), "vera").final_verdict == "CONTRADICTED"
        # Imported labels keep their meaning: one 'import' event each, and every answer whose
        # claims all carry nina's imported labels committed for her (m012), a0 too: the import
        # replaced her blind verdict there.
        assert (
            db.execute(
                "SELECT count(*) FROM label_events WHERE kind = 'import' AND reviewer = 'nina'"
            ).fetchone()[0]
            == 2100
        )
        reveals = {r[0] for r in db.execute("SELECT answer_id FROM answer_reveals WHERE reviewer = 'nina'")}
        assert len(reveals) == 700
        assert db.execute("SELECT count(*) FROM imports WHERE status = 'done'").fetchone()[0] == 2


def test_a_verdict_given_meanwhile_stays_when_the_import_fails(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _database(db_path, tmp_path, 400)
    path = _labels_file(tmp_path / "labels.csv", range(1, 400))
    with store.session(db_path) as db:
        before = _dump(db)
        a1 = store.claim_pk(db, "a1", "c0")  # in the first batch, so hidden when nina labels it
    pauses: list[int] = []

    def label_then_fail() -> None:
        pauses.append(1)
        if len(pauses) == 1:
            with store.session(db_path) as other:
                store.record_label(other, claim=a1, reviewer="nina", kind="blind", verdict="UNSUPPORTED")
        else:
            raise OSError("disk went away")

    monkeypatch.setattr(label_store, "pause_between_batches", label_then_fail)
    with store.session(db_path) as db:
        with pytest.raises(OSError):
            import_labels(db, path)
        after = _dump(db)
        state = store.label_state(db, a1, "nina")
    assert state is not None and state.blind_verdict == "UNSUPPORTED"
    assert after["human_labels"] != before["human_labels"]
    # Nothing of the import is left, only nina's own verdict (its event and current label).
    assert {t: rows for t, rows in after.items() if t not in ("label_events", "human_labels")} == {
        t: rows for t, rows in before.items() if t not in ("label_events", "human_labels")
    }
    assert len(after["label_events"]) == len(before["label_events"]) + 1
    assert len(after["human_labels"]) == len(before["human_labels"]) + 1


@pytest.mark.parametrize(("status", "deletable"), [(None, False), ("done", False), ("publishing", True)])
def test_the_history_stays_append_only_except_for_an_unfinished_import(
    fresh_db: Database, tmp_path: Path, status: str | None, deletable: bool
) -> None:
    import_answers(fresh_db, _answers_file(tmp_path / "answers.jsonl", 1))
    import_id = None
    if status is not None:
        import_id = fresh_db.execute(
            "INSERT INTO imports (status, stamp, pid, host, started_at) "
            "VALUES (:status, 'S', 1, 'h', 't') RETURNING id",
            {"status": status},
        ).fetchone()[0]
    store.record_label(
        fresh_db,
        claim=store.claim_pk(fresh_db, "a0", "c0"),
        reviewer="nina",
        kind="import",
        verdict="SUPPORTED",
        import_id=import_id,
    )
    if deletable:
        fresh_db.execute("DELETE FROM label_events")
        assert fresh_db.execute("SELECT count(*) FROM label_events").fetchone()[0] == 0
    else:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            fresh_db.execute("DELETE FROM label_events")


# ---------------------------------------------------------------- processes: a reviewer meanwhile, a kill


def _cli(db_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "calibration", "--db", str(db_path), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.slow
def test_a_reviewer_writes_while_a_large_label_import_runs(db_path: Path, tmp_path: Path) -> None:
    # 12,000 labels: 24 of the import's transactions (LABEL_BATCH), with the reviewer's chances
    # between them; more labels only make the test slower, not stricter.
    answers = 4_000
    _database(db_path, tmp_path, answers)
    path = _labels_file(tmp_path / "labels.csv", range(1, answers))
    with store.session(db_path) as db:
        claim = store.claim_pk(db, "a0", "c2")  # not in the file
    proc = _cli(db_path, "import-labels", str(path))
    mine: list[int] = []  # the event id of each verdict written while the import runs
    while proc.poll() is None:
        with store.session(db_path) as db:  # refused (DatabaseBusyError) would fail the test here
            store.record_label(
                db,
                claim=claim,
                reviewer="rita",
                kind="blind",
                verdict=(Verdict.SUPPORTED, Verdict.CONTRADICTED)[len(mine) % 2],
            )
            mine.append(db.execute("SELECT max(id) FROM label_events WHERE reviewer = 'rita'").fetchone()[0])
        time.sleep(0.05)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert f"labels: {(answers - 1) * 3} new or changed" in out
    with store.session(db_path) as db:
        first, last = db.execute(
            "SELECT min(id), max(id) FROM label_events WHERE reviewer = 'nina' AND kind = 'import'"
        ).fetchone()
    # Verdicts committed between the import's first and last label: they did not wait for it.
    assert any(first < i < last for i in mine), (first, last, mine)


@pytest.mark.slow
def test_a_killed_label_import_is_removed_and_the_next_one_succeeds(db_path: Path, tmp_path: Path) -> None:
    _database(db_path, tmp_path, 1000)
    path = _labels_file(tmp_path / "labels.csv", range(1000))
    with store.session(db_path) as db:
        before, seen_before = _dump(db), _seen(db)
        n0 = db.execute("SELECT count(*) FROM human_labels").fetchone()[0]
    proc = _cli(db_path, "import-labels", str(path), env={"CALIBRATION_PUBLISH_PAUSE": "0.3"})
    deadline = time.monotonic() + 120
    with store.session(db_path) as db:
        while db.execute("SELECT count(*) FROM human_labels").fetchone()[0] == n0:
            assert proc.poll() is None, proc.communicate()  # a batch must land while it still runs
            assert time.monotonic() < deadline
            time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    with store.session(db_path) as db:
        assert _dump(db) != before  # part of the file is in the tables
        assert _seen(db) == seen_before  # and no reader shows it
    out, err = _cli(db_path, "import-labels", str(path)).communicate()
    assert "Traceback" not in out + err, err
    assert "did not finish" in out and "was removed" in out and "labels.csv" in out
    assert "labels: 3000 new or changed" in out
    with store.session(db_path) as db:
        assert store.info(db)["totals"]["labeled_claims"] == 3000
        assert (
            db.execute(
                "SELECT count(*) FROM label_events WHERE reviewer = 'nina' AND kind = 'import'"
            ).fetchone()[0]
            == 3000
        )


@pytest.mark.slow
def test_recovery_puts_every_content_table_back(db_path: Path, tmp_path: Path) -> None:
    _database(db_path, tmp_path, 1000)
    path = _labels_file(tmp_path / "labels.csv", range(1000))
    with store.session(db_path) as db:
        before = _dump(db)
        n0 = db.execute("SELECT count(*) FROM answer_reveals").fetchone()[0]
    proc = _cli(db_path, "import-labels", str(path), env={"CALIBRATION_PUBLISH_PAUSE": "0.3"})
    deadline = time.monotonic() + 120
    with store.session(db_path) as db:  # a commit (m012) recorded: labels and events are in too
        while db.execute("SELECT count(*) FROM answer_reveals").fetchone()[0] == n0:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    with store.session(db_path) as db:
        messages = import_marks.recover(db)
        assert len(messages) == 1 and "answer reveals" in messages[0] and "label events" in messages[0]
        assert _dump(db) == before
        assert import_marks.recover(db) == []
