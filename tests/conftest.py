"""Shared fixtures: each gives a database in a named state, made fresh for the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from sqlite_utils import Database

from calibration import store
from calibration.importing import import_answers, import_labels

ROOT = Path(__file__).resolve().parents[1]
WICE = ROOT / "data" / "wice"
DEMO = ROOT / "data" / "demo" / "demo_rag_v1.jsonl"
TEST_DATA = Path(__file__).resolve().parent / "data"

# Property tests check properties, not speed (speed is the benchmarks' job): a deadline would
# fail them whenever the machine is busy.
settings.register_profile("calibration", deadline=None)
settings.load_profile("calibration")


@pytest.fixture(autouse=True)
def _no_default_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No test may touch the developer's own data/calibration.db.
    monkeypatch.setenv("CALIBRATION_DB", str(tmp_path / "default.db"))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "calibration.db"


@pytest.fixture
def fresh_db(db_path: Path) -> Iterator[Database]:
    """An empty, migrated database."""
    with store.session(db_path) as db:
        yield db


@pytest.fixture
def wice_db(fresh_db: Database) -> Database:
    """The real WiCE data: two judge runs over the same 100 claims, plus the human labels."""
    import_answers(fresh_db, WICE / "wice_judged_gpt4.jsonl")
    import_answers(fresh_db, WICE / "wice_judged_gpt35.jsonl")
    import_labels(fresh_db, WICE / "wice_human_labels.csv")
    return fresh_db


@pytest.fixture
def demo_db(fresh_db: Database) -> Database:
    """The DEMO-RAG-v1 worked example, judged but not yet labeled."""
    import_answers(fresh_db, DEMO)
    return fresh_db
