"""The schema under Alembic: a new database, a database of the numbered migrations (at any of
them), and the last such release's databases on both engines all end at the newest revision,
with the same schema, and nothing lost; a shipped revision never changes."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, create_engine, inspect, text

from calibration import store
from calibration.cli import main
from calibration.store import revisions, tables
from calibration.store.schema import migrations
from tests.pg_server import Cluster
from tests.test_tables import empty_database, engine_of, schema_of

DATA = Path(__file__).resolve().parent / "data"
VERSIONS = Path(revisions.__file__).resolve().parent / "versions"
# Every shipped revision file and its SHA-256: a shipped revision is never edited (a change of
# the schema is a new revision, whose hash is added here when it ships).
SHIPPED = {
    "0001_m018.py": "9cfa4ca21623ff9c0ae4da06608e33072e9dcb30852222d7bcbb9038d21f6761",
    "0002_identity_ids.py": "4c3a9508f5f571d56b3e6e6765a19a003b9a439496dc3d6c06edb46b5bfbdc58",
    "0003_labeling_closures.py": "b42f2934f5d44c0bcd1ded71e9168f96ffd7bbf286e2c72299c7da099ba15e43",
}


def test_a_shipped_revision_never_changes() -> None:
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in VERSIONS.glob("[!_]*.py")}
    assert files == SHIPPED


def _numbered(url: str | Path, stop_before: str | None = None) -> None:
    """A database as the numbered migrations made it (up to `stop_before`), without Alembic."""
    db = store.connect(url, migrate=False)
    try:
        with store.write(db):
            migrations.apply(db, stop_before=stop_before)
    finally:
        db.close()


def test_the_first_revision_is_the_schema_the_numbered_migrations_made(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    numbered = empty_database(backend, tmp_path, request)
    _numbered(numbered)
    db_url = empty_database(backend, tmp_path, request, "first")
    db = store.connect(db_url, migrate=False)
    try:
        with store.write(db):
            revisions.upgrade(db, revisions.BASELINE)
        assert revisions.current(db) == revisions.BASELINE
        assert [m.name for m in migrations.applied(db)] == migrations.names()
    finally:
        db.close()
    assert schema_of(engine_of(db_url)) == schema_of(engine_of(numbered))
    if backend == "sqlite":  # SQLite keeps each statement's text: the very same
        query = text(
            "SELECT type, name, sql FROM sqlite_master WHERE tbl_name != 'alembic_version' ORDER BY name"
        )
        with engine_of(db_url).connect() as new, engine_of(numbered).connect() as old:
            assert new.execute(query).all() == old.execute(query).all()


@pytest.mark.parametrize("stop_before", ["m002_create_judge_runs", "m012_imported_labels_commit", None])
def test_a_database_of_the_numbered_migrations_is_brought_to_the_newest_revision(
    db_url: str | Path, backend: str, tmp_path: Path, request: pytest.FixtureRequest, stop_before: str | None
) -> None:
    older = empty_database(backend, tmp_path, request)
    _numbered(older, stop_before)
    with store.session(older) as db:
        assert revisions.current(db) == revisions.head()
        assert [m.name for m in migrations.applied(db)] == migrations.names()
    with store.session(db_url):
        pass
    assert schema_of(engine_of(older)) == schema_of(engine_of(db_url))


def _release_m018(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str | Path:
    """A copy of the last numbered release's database on `backend` (the committed files are never
    opened for writing)."""
    if backend == "sqlite":
        path = tmp_path / "release.db"
        shutil.copyfile(DATA / "release-m018.db", path)
        return path
    url = empty_database(backend, tmp_path, request)
    assert isinstance(url, str)
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    subprocess.run(
        [
            str(cluster.bin / "psql"),
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            url,
            "-f",
            str(DATA / "release-m018-postgres.sql"),
        ],
        check=True,
        capture_output=True,
    )
    return url


def _printed(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


# The figures the stored data alone fixes: counts, the confusion matrix, the point estimates,
# the disagreeing claims. Intervals, the flag and the plans are the statistics' own and may be
# improved by a later release; what an upgrade must keep is the data they are computed from.
_DATA_KEYS = (
    "judge_run",
    "n_claims",
    "n_answers",
    "n_labels",
    "n_unresolved",
    "n_disagreeing",
    "unresolved_claims",
    "confusion",
    "per_class",
    "disagreeing_claims",
    "thresholds",
    "n_unlabeled",
    "ac1",
)


def _data_figures(stats: dict[str, Any]) -> dict[str, Any]:
    figures = {key: stats[key] for key in _DATA_KEYS}
    figures["agreement"] = stats["agreement"]["value"]
    figures["kappa"] = stats["kappa"]["value"]
    figures["direction"] = {k: stats["direction"][k] for k in ("lenient", "strict", "mcnemar_exact_p")}
    figures["judge_supported_rate"] = stats["pipeline"]["judge_supported_rate"]
    return figures


def test_the_last_numbered_release_upgrades_in_place_with_the_same_figures_and_exports(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _release_m018(backend, tmp_path, request)
    expected = DATA / "release-m018-out" / backend
    with store.session(url) as db:
        assert revisions.current(db) == revisions.head()
        assert [m.name for m in migrations.applied(db)] == migrations.names()
    for stats in sorted(expected.glob("stats-*.json")):
        run = stats.name.removeprefix("stats-").removesuffix(".json")
        printed = _printed(["--db", str(url), "stats", "--judge-run", run, "--json"])
        assert _data_figures(json.loads(printed)) == _data_figures(
            json.loads(stats.read_text(encoding="utf-8"))
        ), run
    for fmt in ("jsonl", "csv"):
        out = tmp_path / f"export.{fmt}"
        assert main(["--db", str(url), "export", "--format", fmt, "--out", str(out)]) == 0
        assert out.read_bytes() == (expected / f"export.{fmt}").read_bytes(), fmt
    if backend == "sqlite":
        conn = sqlite3.connect(url)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        conn.close()


def stale_numbering(url: str) -> list[str]:
    """The tables whose next id PostgreSQL numbers would be one already stored (none, when every
    writer of ids moved the sequence past them). Takes one value of each sequence."""
    past = "SELECT nextval(pg_get_serial_sequence('{0}', 'id')) > coalesce(max(id), 0) FROM {0}"
    with engine_of(url).connect() as conn:
        return [name for name in tables.NUMBERED if not conn.execute(text(past.format(name))).scalar_one()]


def _largest_ids(url: str | Path) -> dict[str, int]:
    with engine_of(url).connect() as conn:
        return {
            name: int(conn.execute(text(f"SELECT coalesce(max(id), 0) FROM {name}")).scalar_one())
            for name in tables.NUMBERED
        }


def _every_row(url: str | Path) -> dict[str, list[str]]:
    """Every row of every data table (not the record of migrations), sorted."""
    engine = engine_of(url)
    names = [
        t for t in inspect(engine).get_table_names() if t not in ("alembic_version", "_sqlite_migrations")
    ]
    with engine.connect() as conn:
        return {t: sorted(repr(tuple(r)) for r in conn.execute(text(f"SELECT * FROM {t}"))) for t in names}


def _new_label_event(conn: Connection, reviewer: str) -> int:
    """A row numbered by the engine (no id given); its id."""
    new = text(
        "INSERT INTO label_events (claim_pk, reviewer, kind, verdict, created_at) "
        "SELECT min(id), :reviewer, 'blind', 'SUPPORTED', '2026-01-01' FROM claims RETURNING id"
    )
    return int(conn.execute(new, {"reviewer": reviewer}).scalar_one())


def test_the_last_release_upgraded_keeps_its_ids_and_numbers_new_rows_as_a_new_database_does(
    db_url: str | Path, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _release_m018(backend, tmp_path, request)
    before, rows = _largest_ids(url), _every_row(url)
    assert before["claims"] > 0 and before["label_events"] > 0
    with store.session(url), store.session(db_url):
        pass
    after = _every_row(url)
    assert {t: after.pop(t) for t in rows} == rows  # every row, with its id
    assert all(not added for added in after.values())  # a later revision's tables start empty
    assert schema_of(engine_of(url)) == schema_of(engine_of(db_url))  # identity columns, no trigger
    with engine_of(url).begin() as conn:
        assert _new_label_event(conn, "new") == before["label_events"] + 1
    if backend == "postgresql":
        assert isinstance(url, str)
        assert not any("next_id" in t for t in schema_of(engine_of(url))["triggers"])
        assert stale_numbering(url) == []


def test_two_connections_inserting_at_once_take_different_ids(pg_cluster: Cluster) -> None:
    url = pg_cluster.new_database()
    try:
        with store.session(url) as db, store.write(db):
            db.execute(
                "INSERT INTO answers (id, question, answer, content_hash, imported_at) "
                "VALUES ('q', 'q', 'a', 'h', 't')"
            )
            db.execute("INSERT INTO claims (answer_id, claim_id, position, text) VALUES ('q', 'c1', 0, 'x')")
        # Both transactions stay open (SQLAlchemy's own, not the store's write lock): with the
        # largest-plus-one trigger the second took the first's id and waited on its key until
        # the first committed, then failed.
        engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        try:
            with engine.connect() as a, engine.connect() as b:
                b.execute(text("SET lock_timeout = '10s'"))  # a regression fails, it does not hang
                ids = [_new_label_event(a, "a"), _new_label_event(b, "b")]
                b.commit()
                a.commit()
        finally:
            engine.dispose()
        with engine_of(url).connect() as conn:
            stored = conn.execute(text("SELECT id, reviewer FROM label_events ORDER BY id")).all()
        assert len(set(ids)) == 2 and [tuple(r) for r in stored] == sorted(zip(ids, "ab", strict=True))
    finally:
        pg_cluster.drop_database(url)


def test_ids_written_as_they_were_leave_postgresql_numbering_past_them(
    pg_cluster: Cluster, tmp_path: Path
) -> None:
    """An import's claims, a restored export's claims, and a copy (migrate-db) come with their
    ids; the next row each table numbers takes a new one."""
    imported, restored, copied = (pg_cluster.new_database() for _ in range(3))
    try:
        assert main(["--db", imported, "demo"]) == 0
        assert main(["--db", restored, "restore", str(DATA / "export-0.2.0.jsonl")]) == 0
        source = tmp_path / "demo.db"
        assert main(["--db", str(source), "demo"]) == 0
        assert main(["--db", str(source), "migrate-db", str(source), copied]) == 0
        for url in (imported, restored, copied):
            assert _largest_ids(url)["claims"] > 1, url
            assert stale_numbering(url) == [], url
    finally:
        for url in (imported, restored, copied):
            pg_cluster.drop_database(url)


def test_a_database_at_0002_gains_the_labeling_closures_and_keeps_its_rows(
    db_url: str | Path, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = empty_database(backend, tmp_path, request, "at0002")
    db = store.connect(url, migrate=False)
    try:
        with store.write(db):
            revisions.upgrade(db, "0002")
            store.run_id(db, "judge", "v1")
        assert "labeling_closures" not in db.table_names()
    finally:
        db.close()
    rows = _every_row(url)
    with store.session(url) as db:
        assert revisions.current(db) == revisions.head() == "0003"
    after = _every_row(url)
    assert after.pop("labeling_closures") == []
    assert after == rows
    with store.session(db_url):
        pass
    assert schema_of(engine_of(url)) == schema_of(engine_of(db_url))
