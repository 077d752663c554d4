"""Storage failures on a page, in a real browser: with the app running, the database file is
deleted, made read-only, or replaced by a file that is not a database. Every page then shows one
clear sentence (or, where it only reads a readable file, its content), never a traceback or
exception element (the conftest watcher fails the test on one) and never the server's path; a
deleted database is not recreated empty.

Read-only: the tests run as root here, and chmod does not stop root, so as root the file and
its folder get the immutable attribute (`chattr +i`, which stops root too); as any other user
they are chmod-ed 0o444 / 0o555. Either way the test first checks that the file really cannot be
opened for writing, and skips with the reason otherwise.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    WAIT_MS,
    WatchedBrowser,
    build_db,
    page_problems,
    page_wait_until,
    restore_db,
    seen_problems,
    server_errors,
    settle,
    start_app,
)

pytestmark = pytest.mark.browser

LEAD = "Lena Lead"
PAGES = ("", "review", "cycles", "guidelines", "dashboard", "import", "judge_lab")


def _answers() -> list[dict[str, Any]]:
    return [
        {
            "id": f"s{i}",
            "question": f"Question {i}?",
            "answer": f"Answer {i}.",
            "chunks": [{"id": "k1", "text": f"Chunk {i}."}],
            "claims": [{"id": "c1", "claim": f"Answer {i}.", "verdict": "SUPPORTED", "rationale": "r"}],
        }
        for i in range(3)
    ]


def _files(db: Path) -> list[Path]:
    return [p for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists()]


def _delete(db: Path) -> Callable[[], None]:
    for p in _files(db):
        p.unlink()
    return lambda: None


def _replace(db: Path) -> Callable[[], None]:
    for p in _files(db):
        p.unlink()
    db.write_bytes(b"PK\x03\x04 a zip archive, not SQLite " * 200)
    return lambda: None


def _chattr(flag: str, paths: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, text=True, check=False)


def _read_only(db: Path) -> Callable[[], None]:
    paths = [*_files(db), db.parent]
    if os.geteuid() == 0:
        done = _chattr("+i", paths)
        if done.returncode != 0:
            pytest.skip(f"as root a read-only file needs chattr +i, which failed here: {done.stderr.strip()}")

        def undo() -> None:
            _chattr("-i", paths)
    else:
        modes = {p: p.stat().st_mode for p in paths}
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)

        def undo() -> None:
            for p, mode in modes.items():
                p.chmod(mode)

    try:
        with db.open("r+b"):
            pass
    except OSError:
        return undo
    undo()
    pytest.skip("the database file stayed writable (no way to make it read-only here)")


BREAKS: dict[str, tuple[Callable[[Path], Callable[[], None]], str]] = {
    "deleted": (_delete, "the database file has disappeared"),
    "replaced": (_replace, "not a calibration database"),
}
STORAGE_SENTENCE = "The database could not do its part"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path, Path]]:
    """One app for the module, on a database in a folder of its own (a read-only case locks
    the folder); yields (url, database, server log, the pristine copy)."""
    tmp = tmp_path_factory.mktemp("storage")
    pristine = tmp / "pristine.db"
    build_db(pristine, _answers(), cycle_name="cycle one", reviewers=[LEAD])
    (tmp / "db").mkdir()
    db_path = tmp / "db" / "cal.db"
    restore_db(pristine, db_path)
    log = tmp / "server.log"
    with start_app(db_path, log, leads=LEAD) as url:
        yield url, db_path, log, pristine


@pytest.fixture
def running(server: tuple[str, Path, Path, Path]) -> tuple[str, Path, Path]:
    """The module's app on a whole database again (the test before may have broken it)."""
    url, db_path, log, pristine = server
    restore_db(pristine, db_path)
    return url, db_path, log


def _text(page: Any) -> str:
    return page.evaluate("() => document.querySelector('[data-testid=\"stApp\"]').textContent")


def _lead_signed_in(page: Any, url: str) -> str:
    """Healthy first: the server opens (and migrates) the database, and the lead signs in; the
    sign-in link's query string, for direct URLs."""
    page.set_default_timeout(WAIT_MS)
    page.goto(f"{url}/review")
    field = page.get_by_label("Your name")
    field.fill(LEAD)
    field.press("Enter")
    page.locator(".st-key-cycle-name .cal-cycle").wait_for()
    settle(page, 400)
    query = page.url.partition("?")[2]
    assert "signin=" in query
    return query


@pytest.mark.parametrize("case", list(BREAKS))
def test_a_broken_database_is_one_sentence_on_every_page(
    case: str, running: tuple[str, Path, Path], page: Any
) -> None:
    url, db_path, log = running
    query = _lead_signed_in(page, url)
    breaker, sentence = BREAKS[case]
    undo = breaker(db_path)
    try:
        for name in PAGES:
            # A direct URL with the sign-in link: a fresh session that reads the database at once.
            page.goto(f"{url}/{name}?{query}")
            settle(page, 400)
            text = _text(page)
            assert str(db_path.parent) not in text and "cal.db" not in text, f"/{name} shows the path"
            assert not page_problems(page), page_problems(page)
            assert sentence in text, f"/{name}: {text[:600]}"
            assert text.count(STORAGE_SENTENCE) <= 1, f"/{name} says it twice"
        if case == "deleted":
            assert not db_path.exists(), "the running app recreated the deleted database"
    finally:
        undo()
    assert not seen_problems()
    assert not [e for e in server_errors(log) if "Traceback" in e]


def test_a_database_made_read_only_is_still_read_and_refuses_a_write(
    running: tuple[str, Path, Path], page: Any
) -> None:
    # The server's open connections keep reading a file made read-only (its WAL files are
    # there): every page shows its content, or at most the one sentence, and the first write
    # says read-only.
    url, db_path, log = running
    query = _lead_signed_in(page, url)
    undo = _read_only(db_path)
    try:
        for name in PAGES:
            page.goto(f"{url}/{name}?{query}")
            settle(page, 400)
            text = _text(page)
            assert not page_problems(page), page_problems(page)
            assert text.count(STORAGE_SENTENCE) <= 1, f"/{name} says it twice"
            if STORAGE_SENTENCE in text:
                assert "read-only" in text and str(db_path.parent) not in text, f"/{name}: {text[:600]}"
        # A name signing in for the first time is recorded: a write.
        page.goto(f"{url}/review")
        field = page.get_by_label("Your name")
        field.fill("Nina Newcomer")
        field.press("Enter")
        page.get_by_text("the database cannot be written", exact=False).first.wait_for()
        text = _text(page)
        assert "read-only; nothing was written" in text, text[:600]
        assert str(db_path.parent) not in text
    finally:
        undo()
    assert not seen_problems()
    assert not [e for e in server_errors(log) if "Traceback" in e]


def _reports(pg: Any, count: int) -> list[str]:
    """The watcher's reports once `count` have come, or all that came in the suite's wait."""
    found: list[str] = []

    def enough() -> bool:
        found.extend(seen_problems())
        return len(found) >= count

    page_wait_until(pg, enough)
    return found


def test_the_page_watcher_reports_a_traceback(browser: WatchedBrowser) -> None:
    # The conftest watcher must fail loudly: a page that shows a traceback, or Streamlit's
    # exception element, is reported (and forgotten here, so this test itself passes).
    ctx = browser.new_context()
    try:
        pg = ctx.new_page()
        pg.set_content("<body><p>fine</p></body>")
        pg.wait_for_timeout(300)  # a clean page reports nothing: an absence, so a pause
        assert not seen_problems()
        pg.evaluate("""() => { const p = document.createElement('pre');
            p.textContent = 'Traceback (most recent call last):\\n  File "/srv/app.py"';
            document.body.appendChild(p); }""")
        found = _reports(pg, 1)
        assert page_problems(pg) and "Traceback" in page_problems(pg)[0]
        other = ctx.new_page()  # a new document: reported again
        other.set_content('<body><div data-testid="stException">boom</div></body>')
        found += _reports(other, 1)
        assert page_problems(other) == [f"{other.url}: 1 exception element(s)"]
        assert len(found) == 2 and "Traceback (most recent call last)" in found[0], found
        assert "1 exception element(s)" in found[1]
    finally:
        ctx.close()
