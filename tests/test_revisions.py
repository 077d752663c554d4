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
from sqlalchemy import text

from calibration import store
from calibration.cli import main
from calibration.store import revisions
from calibration.store.schema import migrations
from tests.pg_server import Cluster
from tests.test_tables import empty_database, engine_of, schema_of

DATA = Path(__file__).resolve().parent / "data"
VERSIONS = Path(revisions.__file__).resolve().parent / "versions"
# Every shipped revision file and its SHA-256: a shipped revision is never edited (a change of
# the schema is a new revision, whose hash is added here when it ships).
SHIPPED = {
    "0001_m018.py": "9cfa4ca21623ff9c0ae4da06608e33072e9dcb30852222d7bcbb9038d21f6761",
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


def test_a_new_database_has_the_schema_the_numbered_migrations_made(
    db_url: str | Path, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    numbered = empty_database(backend, tmp_path, request)
    _numbered(numbered)
    with store.session(db_url) as db:
        assert revisions.current(db) == revisions.head()
        assert [m.name for m in migrations.applied(db)] == migrations.names()
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
