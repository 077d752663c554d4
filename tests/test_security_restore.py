"""Restore and `migrate-db` on finished data only, on both engines; database URLs shown with
their password masked; no traceback from a text PostgreSQL cannot store."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from calibration import api, backup, store
from calibration.store import answers as answer_store
from calibration.store import postgres
from tests.conftest import DEMO, RunCli
from tests.pg_server import Cluster

PASSWORD = "s3cret-pw"


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> Iterator[str]:
    url = pg_cluster.new_database()
    yield url
    pg_cluster.drop_database(url)


@pytest.fixture
def pg_url_with_password(pg_url: str) -> Iterator[str]:
    """`pg_url` with a password in it (the test server trusts every connection, so it is taken)."""
    url = pg_url.replace("postgres@", f"postgres:{PASSWORD}@", 1)
    yield url
    postgres.close_pool(url)


def _demo_file(run_cli: RunCli, tmp_path: Path) -> Path:
    source = tmp_path / "demo.db"
    run_cli("demo", db=source, expect=0)
    return source


def _count(url: str | Path, table: str) -> int:
    with store.session(url) as db:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


# ---------------------------------------------------------------- URLs shown without their password


def test_info_shows_the_database_url_without_its_password(
    run_cli: RunCli, tmp_path: Path, pg_url_with_password: str
) -> None:
    run_cli("migrate-db", _demo_file(run_cli, tmp_path), pg_url_with_password, db=tmp_path / "x", expect=0)
    out = run_cli("info", db=pg_url_with_password, expect=0)
    assert PASSWORD not in out.stdout + out.stderr
    assert "database: postgresql://postgres:***@" in out.stdout


def test_migrate_db_names_its_real_source_and_target_without_a_password(
    run_cli: RunCli, tmp_path: Path, pg_url_with_password: str
) -> None:
    source = _demo_file(run_cli, tmp_path)
    back = tmp_path / "back.db"
    there = run_cli("migrate-db", source, pg_url_with_password, db=tmp_path / "unused.db", expect=0)
    again = run_cli("migrate-db", pg_url_with_password, back, db=tmp_path / "unused.db", expect=0)
    refused = run_cli("migrate-db", source, pg_url_with_password, db=tmp_path / "unused.db", expect=1)
    said = "".join(r.stdout + r.stderr for r in (there, again, refused))
    assert PASSWORD not in said
    assert "unused.db" not in said and "calibration.db" not in said
    assert f"note: no database at {back}: creating a new one" in again.stderr
    assert "postgres:***@" in there.stdout and "target database is not empty" in refused.stderr
    assert not (tmp_path / "unused.db").exists()


def test_the_api_object_shows_its_url_without_the_password(pg_url_with_password: str) -> None:
    with api.connect(pg_url_with_password) as cal:
        assert PASSWORD not in repr(cal) and "postgres:***@" in repr(cal)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql:///calibration?host=/run/pg&password=pw",
            "postgresql:///calibration?host=/run/pg&password=***",
        ),
        ("postgres://:pw@[::1]:5432/db", "postgres://:***@[::1]:5432/db"),
    ],
)
def test_every_way_of_giving_a_password_is_masked(url: str, shown: str) -> None:
    assert store.shown(url) == shown


# ---------------------------------------------------------------- restore into PostgreSQL


def test_a_backup_restores_into_postgresql(run_cli: RunCli, tmp_path: Path, pg_url: str) -> None:
    source = _demo_file(run_cli, tmp_path)
    out = tmp_path / "backup.jsonl"
    run_cli("backup", "--out", out, db=source, expect=0)
    restored = run_cli("restore", out, db=pg_url, expect=0)
    assert "restored (backup)" in restored.stdout
    for table in ("answers", "claims", "judge_verdicts", "answer_checks"):
        assert _count(pg_url, table) == _count(source, table) > 0, table
    again = tmp_path / "again.jsonl"
    run_cli("backup", "--out", again, db=pg_url, expect=0)
    rows = sorted(out.read_text(encoding="utf-8").splitlines()[1:])
    assert sorted(again.read_text(encoding="utf-8").splitlines()[1:]) == rows
    # Into PostgreSQL as into SQLite: never merged into a database that holds something.
    refused = run_cli("restore", out, db=pg_url, expect=1)
    assert "is not empty" in refused.stderr
    assert _count(pg_url, "answers") == _count(source, "answers")


def test_a_refused_restore_into_postgresql_writes_nothing(
    run_cli: RunCli, tmp_path: Path, pg_url: str
) -> None:
    source = _demo_file(run_cli, tmp_path)
    out = tmp_path / "backup.jsonl"
    run_cli("backup", "--out", out, db=source, expect=0)
    lines = out.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("table") == "label_events")
    row = json.loads(lines[at])
    row["row"]["note"] = "before\x00after"
    lines[at] = json.dumps(row)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused = run_cli("restore", out, db=pg_url, expect=1)
    assert f"{out}:{at + 1}: row.note:" in refused.stderr and "NUL" in refused.stderr
    assert _count(pg_url, "answers") == 0


# ---------------------------------------------------------------- migrate-db on finished data only


def test_migrate_db_refuses_while_an_import_is_moving_its_rows_in(
    db_url: str | Path, run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "copy.db"
    during: list = []

    def copy_between_batches() -> None:
        if not during:
            during.append(run_cli("migrate-db", db_url, target, db=tmp_path / "unused.db"))

    monkeypatch.setattr(answer_store, "pause_between_batches", copy_between_batches)
    with store.session(db_url) as db:
        rep = backup.importing.import_answers(db, DEMO)
    assert rep.answers_new > 0 and during
    assert during[0].returncode == 1 and "an import is moving its rows in" in during[0].stderr
    assert not target.exists()  # no empty file left to be mistaken for a copy
    monkeypatch.undo()
    run_cli("migrate-db", db_url, target, db=tmp_path / "unused.db", expect=0)
    assert _count(target, "answers") == rep.answers_new
    with store.session(target) as db:
        assert db.execute("SELECT status FROM imports").fetchall() == [("done",)]


def test_a_nul_in_a_stored_note_is_refused_by_migrate_db_into_postgresql(
    run_cli: RunCli, tmp_path: Path, pg_url: str
) -> None:
    source = _demo_file(run_cli, tmp_path)
    # As an earlier release could store it: SQLite keeps a NUL in text, PostgreSQL cannot.
    with sqlite3.connect(source) as conn:
        conn.execute(
            "INSERT INTO label_events (id, claim_pk, reviewer, kind, verdict, evidence, note, created_at) "
            "VALUES (4242, 1, 'ann', 'blind', 'SUPPORTED', '[]', ?, '2026-01-01T00:00:00+00:00')",
            ["before\x00after"],
        )
    conn.close()
    refused = run_cli("migrate-db", source, pg_url, db=tmp_path / "unused.db", expect=1)
    assert "label_events, the row with id 4242, column note" in refused.stderr
    assert "NUL" in refused.stderr and "nothing was copied" in refused.stderr
    assert _count(pg_url, "answers") == 0
