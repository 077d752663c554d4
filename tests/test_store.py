from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from calibration import store
from calibration.errors import ConflictError, DatabaseBusyError, NotFoundError
from calibration.store import Database


def test_every_connection_has_wal_foreign_keys_and_busy_timeout(db_path: Path) -> None:
    with store.session(db_path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert db.execute("PRAGMA busy_timeout").fetchone()[0] == store.BUSY_TIMEOUT_MS
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(
                "INSERT INTO chunks (answer_id, position, chunk_id, text) VALUES ('missing', 0, 'c', 't')"
            )


def test_sql_text_binds_values_by_name_and_keeps_its_literals(fresh_db: Database) -> None:
    # `:key` is a value; a percent sign and an escaped colon before a word are the text's own.
    fresh_db.execute("INSERT INTO settings (key, value) VALUES (:key, '100% at \\:noon')", {"key": "k"})
    found = fresh_db.execute("SELECT key, value FROM settings WHERE value LIKE :like", {"like": "100%"})
    assert found.fetchall() == [("k", "100% at :noon")]
    assert list(fresh_db.query("SELECT value FROM settings WHERE key = :key", {"key": "k"})) == [
        {"value": "100% at :noon"}
    ]


def test_sql_text_refuses_positional_values(fresh_db: Database) -> None:
    with pytest.raises(TypeError, match="by name: write `:name`"):
        fresh_db.execute("SELECT value FROM settings WHERE key = ?", ["k"])  # type: ignore[arg-type]


def test_sql_text_runs_inside_the_write_it_is_given_or_on_its_own(
    fresh_db: Database, db_url: str | Path
) -> None:
    def stored() -> list[str]:
        with store.session(db_url) as other:  # another connection: what is committed
            return [r[0] for r in other.execute("SELECT key FROM settings ORDER BY key")]

    with pytest.raises(RuntimeError), store.write(fresh_db):
        fresh_db.execute("INSERT INTO settings (key, value) VALUES ('in-write', 'v')")
        with fresh_db.atomic():
            fresh_db.execute("INSERT INTO settings (key, value) VALUES ('in-savepoint', 'v')")
        assert stored() == []  # not committed before the write ends
        raise RuntimeError("a bug")
    assert stored() == []  # rolled back with the write
    with store.write(fresh_db):
        fresh_db.execute("INSERT INTO settings (key, value) VALUES ('kept', 'v')")
        with pytest.raises(RuntimeError), fresh_db.atomic():
            fresh_db.execute("INSERT INTO settings (key, value) VALUES ('undone', 'v')")
            raise RuntimeError("a bug")
    fresh_db.execute("INSERT INTO settings (key, value) VALUES ('alone', 'v')")
    assert not fresh_db.in_transaction  # a statement outside a write commits on its own
    assert stored() == ["alone", "kept"]


def test_migrations_are_recorded_and_not_rerun(db_path: Path) -> None:
    with store.session(db_path) as db:
        names = [m.name for m in store.migrations.applied(db)]
    assert names[:4] == [
        "m001_create_answers",
        "m002_create_judge_runs",
        "m003_create_labels",
        "m004_create_cycles",
    ]
    store.connection._migrated.clear()
    with store.session(db_path) as db:
        assert [m.name for m in store.migrations.applied(db)] == names


def test_label_history_is_append_only(wice_db: Database) -> None:
    with pytest.raises(wice_db.integrity_errors, match="append-only"):
        wice_db.execute("UPDATE label_events SET verdict = 'SUPPORTED'")
    with pytest.raises(wice_db.integrity_errors, match="append-only"):
        wice_db.execute("DELETE FROM label_events")


def test_blind_change_and_reconcile_keep_full_history(wice_db: Database) -> None:
    run = store.find_judge_run(wice_db, "wice-gpt4")
    claim = store.claim_pk(wice_db, "test00017", "test00017-c1")  # gpt-4 says SUPPORTED
    store.record_label(wice_db, claim=claim, reviewer="ann", kind="blind", verdict="SUPPORTED")
    store.record_label(wice_db, claim=claim, reviewer="ann", kind="blind", verdict="UNSUPPORTED")
    with pytest.raises(ConflictError):
        store.record_label(wice_db, claim=claim, reviewer="bob", kind="keep")
    state = store.record_label(wice_db, claim=claim, reviewer="ann", kind="judge_right", judge_run_id=run.id)
    judge = store.answers.judge_verdict(wice_db, run.id, claim)
    assert (state.blind_verdict, state.final_verdict, state.slip) == ("UNSUPPORTED", judge, True)
    kinds = [(e["kind"], e["verdict"]) for e in store.label_history(wice_db, claim, "ann")]
    assert kinds == [("blind", "SUPPORTED"), ("blind", "UNSUPPORTED"), ("judge_right", judge)]
    keep = store.record_label(wice_db, claim=claim, reviewer="ann", kind="keep")
    assert (keep.final_verdict, keep.slip, keep.reconciled) == ("UNSUPPORTED", False, "keep")


def test_skip_and_unclear_are_recorded_without_a_verdict(demo_db: Database) -> None:
    claim = store.claim_pk(demo_db, "Q1", "c1")
    assert store.record_label(demo_db, claim=claim, reviewer="ann", kind="skip").status == "skipped"
    state = store.record_label(demo_db, claim=claim, reviewer="ann", kind="unclear", note="ask")
    assert (state.status, state.final_verdict, state.note) == ("unclear", None, "ask")


def test_find_judge_run_by_version_name_or_newest(wice_db: Database) -> None:
    assert store.find_judge_run(wice_db).prompt_version == "wice-gpt35"
    assert store.find_judge_run(wice_db, "gpt-4-0613@wice-gpt4").prompt_version == "wice-gpt4"
    with pytest.raises(NotFoundError, match="known runs: gpt-4-0613@wice-gpt4"):
        store.find_judge_run(wice_db, "nope")


def test_threads_writing_labels_at_once_lose_nothing(wice_db: Database, db_url: str | Path) -> None:
    """Eight threads, each its own connection as a Streamlit rerun would have, write at once."""
    claims = [pk for (pk,) in wice_db.execute("SELECT id FROM claims ORDER BY id")]
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def reviewer(n: int) -> None:
        try:
            start.wait()
            for i, claim in enumerate(claims[:40]):
                with store.session(db_url) as db:
                    verdict = ("SUPPORTED", "UNSUPPORTED")[(i + n) % 2]
                    store.record_label(db, claim=claim, reviewer=f"r{n}", kind="blind", verdict=verdict)
                    if i % 5 == 0:  # same claim, same reviewer, changed mind: a second event
                        store.record_label(
                            db, claim=claim, reviewer=f"r{n}", kind="blind", verdict="CONTRADICTED"
                        )
        except BaseException as exc:  # collected: a "database is locked" must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=reviewer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with store.session(db_url) as db:
        assert db.execute("SELECT count(*) FROM label_events WHERE reviewer LIKE 'r%'").fetchone()[0] == 8 * (
            40 + 8
        )
        assert (
            db.execute("SELECT count(*) FROM human_labels WHERE reviewer LIKE 'r%'").fetchone()[0] == 8 * 40
        )
        changed = db.execute(
            "SELECT count(*) FROM human_labels WHERE reviewer LIKE 'r%' AND final_verdict = 'CONTRADICTED'"
        ).fetchone()[0]
        assert changed == 8 * 8


def test_info_counts_a_claim_once_whatever_the_number_of_reviewers(demo_db: Database) -> None:
    claim = store.claim_pk(demo_db, "Q1", "c1")
    for reviewer in ("anna", "boris", "vera"):
        store.record_label(demo_db, claim=claim, reviewer=reviewer, kind="blind", verdict="SUPPORTED")
    (run,) = store.info(demo_db)["runs"]
    assert (run.answers, run.claims, run.labeled_claims) == (5, 9, 1)
    assert store.info(demo_db)["totals"]["reviewers"] == 3


def test_adjudicate_from_the_cli_overrides_and_is_kept_in_history(
    demo_db: Database, db_url: str | Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from calibration.cli import main

    claim = store.claim_pk(demo_db, "Q2", "c2")
    store.record_label(demo_db, claim=claim, reviewer="anna", kind="blind", verdict="CONTRADICTED")
    store.record_label(demo_db, claim=claim, reviewer="boris", kind="blind", verdict="UNSUPPORTED")
    assert main(["--db", str(db_url), "adjudicate", "Q2", "c2", "contradicted", "--by", "lead"]) == 0
    assert "adjudicated CONTRADICTED by lead" in capsys.readouterr().out
    adjudicated = store.answers.adjudication(demo_db, claim)
    assert adjudicated is not None and adjudicated[:2] == ("CONTRADICTED", "lead")
    assert [e["kind"] for e in store.label_history(demo_db, claim)] == ["blind", "blind", "adjudicate"]
    assert main(["--db", str(db_url), "adjudicate", "Q2", "c9", "SUPPORTED", "--by", "lead"]) == 1
    assert "no claim 'c9' in answer 'Q2'" in capsys.readouterr().err
    escape = ["adjudicate", "Q2", "c2", "SUPPORTED", "--by", "lead", "--note", "see\x1b[2J"]
    assert main(["--db", str(db_url), *escape]) == 1
    assert capsys.readouterr().err == (
        "error: --note: contains the control character U+001B ESCAPE at character 4; "
        "type it again without it\n"
    )
    assert len(store.label_history(demo_db, claim)) == 3  # nothing recorded


@pytest.mark.slow
def test_an_acknowledged_label_survives_the_process_being_killed(
    demo_db: Database, db_url: str | Path
) -> None:
    """A writer process records a label, says so, and is killed with SIGKILL straight after."""
    import signal
    import subprocess
    import sys

    script = (
        "import os, signal, sys\n"
        "from calibration import store\n"
        "with store.session(sys.argv[1]) as db:\n"
        "    claim = store.claim_pk(db, 'Q2', 'c2')\n"
        "    store.record_label(db, claim=claim, reviewer='anna', kind='blind', verdict='CONTRADICTED')\n"
        "    print('acknowledged', flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(db_url)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=60,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL and "acknowledged" in proc.stdout
    with store.session(db_url) as db:
        state = store.label_state(db, store.claim_pk(db, "Q2", "c2"), "anna")
        assert state is not None and state.final_verdict == "CONTRADICTED"
        if db.dialect == "sqlite":
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.sqlite_only  # SQLite's file lock
def test_a_busy_database_is_a_clear_error_not_a_traceback(
    demo_db: Database, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store.connection, "BUSY_TIMEOUT_MS", 50)
    blocker = sqlite3.connect(str(db_path), isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        with store.session(db_path) as db:
            db.conn.execute("PRAGMA busy_timeout = 50")
            with pytest.raises(DatabaseBusyError, match="database is busy"):
                store.record_label(
                    db,
                    claim=store.claim_pk(db, "Q1", "c1"),
                    reviewer="ann",
                    kind="blind",
                    verdict="SUPPORTED",
                )
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert demo_db.execute("SELECT count(*) FROM label_events").fetchone()[0] == 0


def test_bad_label_arguments_are_input_errors(demo_db: Database) -> None:
    from calibration.errors import InputError

    claim = store.claim_pk(demo_db, "Q1", "c1")
    with pytest.raises(InputError, match="unknown verdict 'MAYBE'"):
        store.record_label(demo_db, claim=claim, reviewer="ann", kind="blind", verdict="MAYBE")
    with pytest.raises(InputError, match="needs a reviewer"):
        store.record_label(demo_db, claim=claim, reviewer="", kind="blind", verdict="SUPPORTED")
    with pytest.raises(InputError, match="unknown verdict"):
        store.adjudicate(demo_db, claim=claim, adjudicator="lead", verdict="maybe")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://calib:s3cret@db.internal:5433/calibration",
            "postgresql://calib:***@db.internal:5433/calibration",
        ),
        ("postgresql://calib@db.internal/calibration", "postgresql://calib@db.internal/calibration"),
        ("data/calibration.db", "data/calibration.db"),
    ],
)
def test_a_database_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert store.shown(url) == shown


def test_closing_a_runs_labeling_is_stored_once_and_read_back(demo_db: Database) -> None:
    run = store.find_judge_run(demo_db)
    assert store.labeling_closure(demo_db, run.id) is None
    reading = {"agreement": [0.71, 0.83], "n_claims": 40}
    closed = store.close_labeling(demo_db, run.id, "Lena Lead", reading)
    assert store.labeling_closure(demo_db, run.id) == closed
    assert (closed.run_id, closed.closed_by, closed.reading) == (run.id, "Lena Lead", reading)
    with pytest.raises(ConflictError):
        store.close_labeling(demo_db, run.id, "Someone Else", {})
    assert store.labeling_closure(demo_db, run.id) == closed  # the refused second close wrote nothing
