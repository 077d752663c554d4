"""Storage failures are one sentence (a StorageError subclass), never a traceback, and a running
process never recreates a vanished database file empty."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from calibration import store
from calibration.errors import (
    DatabaseMissingError,
    DiskFullError,
    NotADatabaseError,
    ReadOnlyError,
    StorageError,
)
from calibration.store import connection
from calibration.store.sqlite import open_file


def test_a_full_disk_is_disk_full_error(db_path: Path) -> None:
    with store.session(db_path) as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages + 1}")  # the disk is "full" one page on
        full = r"^the disk holding the database is full; nothing was written"
        with pytest.raises(DiskFullError, match=full), store.write(db):
            db.execute("CREATE TABLE filler (x TEXT)")
            db.conn.executemany("INSERT INTO filler VALUES (?)", [("x" * 4000,)] * 50)
        assert "filler" not in db.table_names()  # rolled back


def test_a_read_only_database_is_read_only_error(db_path: Path) -> None:
    with store.session(db_path):
        pass
    db = open_file(db_path, read_only=True)
    with pytest.raises(ReadOnlyError, match="read-only; nothing was written"), store.write(db):
        db.execute("INSERT INTO settings (key, value) VALUES ('k', 'v')")
    db.close()


def test_a_file_that_is_not_a_database_is_not_a_database_error(tmp_path: Path) -> None:
    fake = tmp_path / "fake.db"
    fake.write_bytes(b"PK\x03\x04 a zip, not SQLite" * 100)
    with pytest.raises(NotADatabaseError, match="not a calibration database"):
        store.connect(fake)


def test_a_vanished_database_is_never_recreated_empty(db_path: Path) -> None:
    with store.session(db_path):
        pass
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    with pytest.raises(DatabaseMissingError, match="not recreated empty"):
        store.connect(db_path)
    assert not db_path.exists()
    # The message names no path: pages show it as it is.
    try:
        store.connect(db_path)
    except StorageError as exc:
        assert str(db_path) not in str(exc) and db_path.name not in str(exc)


def test_a_missing_database_is_refused_when_not_creating(tmp_path: Path) -> None:
    with pytest.raises(DatabaseMissingError, match="no database file at the given path"):
        store.connect(tmp_path / "typo.db", create=False)
    assert not (tmp_path / "typo.db").exists()


def test_a_replaced_database_file_is_checked_again(tmp_path: Path) -> None:
    path = tmp_path / "cal.db"
    with store.session(path):
        pass
    Path(f"{path}-wal").unlink(missing_ok=True)
    Path(f"{path}-shm").unlink(missing_ok=True)
    # A restored backup (here: an empty SQLite file) moved into place is migrated, not refused.
    backup = tmp_path / "backup.db"
    sqlite3.connect(backup).execute("CREATE TABLE t (x)").connection.close()
    os.replace(backup, path)
    with store.session(path) as db:
        assert "answers" in db.table_names()


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (13, DiskFullError),
        (8, ReadOnlyError),
        (26, NotADatabaseError),
        (11, NotADatabaseError),
        (14, ReadOnlyError),
    ],
)
def test_storage_error_maps_sqlite_result_codes(code: int, cls: type[StorageError]) -> None:
    exc = sqlite3.OperationalError("x")
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    assert type(connection.storage_error(exc)) is cls


def test_an_unknown_sqlite_error_stays_a_bug() -> None:
    assert connection.storage_error(sqlite3.OperationalError("no such column: x")) is None
