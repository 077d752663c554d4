"""The app server keeps a finished unit of work's SQLite connection for the next one
(`store.keep_idle_connections`): what a kept connection must never carry over."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from calibration import store
from calibration.errors import ReadOnlyError
from calibration.store.sqlite import SQLiteDatabase


@pytest.fixture
def kept() -> Iterator[None]:
    """Idle connections kept, as in the app server."""
    store.keep_idle_connections()
    yield
    store.keep_idle_connections(False)


def _conn(db: store.Database) -> sqlite3.Connection:
    assert isinstance(db, SQLiteDatabase)
    return db.conn


def _add_setting(path: Path, key: str) -> None:
    with store.session(path) as db, store.write(db):
        store.set_setting(db, key, "v")


def test_a_command_closes_its_connection(db_path: Path) -> None:
    with store.session(db_path) as db:
        conn = _conn(db)
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")
    # The last connection closed: the commits are in the file itself, no -wal beside it.
    assert not Path(f"{db_path}-wal").exists()


def test_the_server_gives_the_next_unit_of_work_the_same_connection_on_any_thread(
    db_path: Path, kept: None
) -> None:
    with store.session(db_path) as db:
        first = _conn(db)
    seen: list[sqlite3.Connection] = []

    def other_thread() -> None:
        with store.session(db_path) as db:
            seen.append(_conn(db))
            db.execute("SELECT count(*) FROM claims").fetchone()

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert seen == [first]


def test_two_units_of_work_at_once_never_share_a_connection(db_path: Path, kept: None) -> None:
    with store.session(db_path) as a, store.session(db_path) as b:
        first = {_conn(a), _conn(b)}
    assert len(first) == 2
    with store.session(db_path) as a, store.session(db_path) as b:  # both were kept
        assert {_conn(a), _conn(b)} == first


def test_a_cursor_left_half_read_does_not_keep_an_old_snapshot(db_path: Path, kept: None) -> None:
    for i in range(3):
        _add_setting(db_path, f"k{i}")
    with store.session(db_path) as db:
        cur = db.execute("SELECT key FROM settings ORDER BY key")
        cur.fetchone()  # left half read: no read snapshot of this moment may outlive the session
    with sqlite3.connect(db_path) as other:
        other.execute("INSERT INTO settings (key, value) VALUES ('late', 'v')")
    with store.session(db_path) as db:
        assert db.execute("SELECT count(*) FROM settings WHERE key = 'late'").fetchone()[0] == 1
        with store.write(db):  # and a write starts from the newest state, not a stale one
            store.set_setting(db, "later", "v")


def test_a_connection_with_something_attached_or_staged_is_not_kept(
    db_path: Path, tmp_path: Path, kept: None
) -> None:
    with store.session(db_path) as db:
        db.execute("ATTACH DATABASE :path AS other", {"path": str(tmp_path / "other.db")})
        attached = _conn(db)
    with store.session(db_path) as db:
        db.create_staging("s_claims", "claims", ("id", "text"))
        staged = _conn(db)
    with store.session(db_path) as db:
        assert _conn(db) not in (attached, staged)
        assert [r[1] for r in db.execute("PRAGMA database_list")] == ["main"]


def test_a_unit_of_work_that_failed_leaves_no_connection_behind(db_path: Path, kept: None) -> None:
    with pytest.raises(RuntimeError), store.session(db_path) as db:
        failed = _conn(db)
        raise RuntimeError("a bug")
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        failed.execute("SELECT 1")


def test_a_replaced_file_is_read_through_a_new_connection(db_path: Path, tmp_path: Path, kept: None) -> None:
    other = tmp_path / "other.db"
    _add_setting(other, "only-in-other")
    with store.session(db_path) as db:
        assert store.get_setting(db, "only-in-other") is None
    store.keep_idle_connections(False)  # the copy below must be complete (no -wal left out)
    shutil.copyfile(other, tmp_path / "copy.db")
    store.keep_idle_connections()
    with store.session(db_path) as db:
        before = _conn(db)
    os.replace(tmp_path / "copy.db", db_path)  # a restored backup
    with store.session(db_path) as db:
        assert _conn(db) is not before
        assert store.get_setting(db, "only-in-other") == "v"


def _read_only(path: Path, on: bool) -> None:
    if os.geteuid() != 0:
        path.chmod(0o444 if on else 0o644)
        return
    # root writes through file modes; only the immutable attribute stops it.
    done = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, f"chattr: {done.stderr.strip()}"


def test_a_file_made_read_only_refuses_the_next_write(db_path: Path, kept: None) -> None:
    _add_setting(db_path, "before")  # leaves a kept, writable connection
    store.keep_idle_connections(False)  # everything in the file itself before it is frozen
    store.keep_idle_connections()
    with store.session(db_path) as db:
        assert store.get_setting(db, "before") == "v"
    _read_only(db_path, True)
    try:
        with pytest.raises(ReadOnlyError):
            _add_setting(db_path, "after")
    finally:
        _read_only(db_path, False)
    _add_setting(db_path, "after")
    with store.session(db_path) as db:
        assert store.get_setting(db, "after") == "v"


def test_turning_it_off_closes_the_kept_ones_and_completes_the_file(db_path: Path, kept: None) -> None:
    _add_setting(db_path, "k")
    with store.session(db_path) as db:
        conn = _conn(db)
    assert Path(f"{db_path}-wal").exists()  # the kept connection holds the WAL open
    store.keep_idle_connections(False)
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")
    assert not Path(f"{db_path}-wal").exists()
    with sqlite3.connect(db_path) as plain:
        assert plain.execute("SELECT value FROM settings WHERE key = 'k'").fetchone() == ("v",)


def test_few_connections_stay_open_however_many_files(tmp_path: Path, kept: None) -> None:
    conns = []
    for i in range(store.connection.IDLE_FILES + 3):
        with store.session(tmp_path / f"{i}.db") as db:
            conns.append(_conn(db))
    closed = 0
    for conn in conns:
        try:
            conn.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            closed += 1
    assert closed == 3  # the oldest files' connections
