"""The Import page in a real browser: check a DeepEval file, read the report, confirm, find the run.

An invalid file shows its problems with line and field, and writes nothing.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calibration import adapters, store

from .conftest import ROOT, SCREENSHOTS, next_frame, require_browser, server_errors, start_app, wait_for_card

pytestmark = pytest.mark.browser

DATA = ROOT / "tests" / "data" / "adapters"
GOOD = DATA / "deepeval_latest_test_run.json"
BAD = DATA / "deepeval_bad.json"
DOCS_SHOT = ROOT / "docs" / "import.png"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    require_browser()
    tmp = tmp_path_factory.mktemp("import_page")
    db = tmp / "app.db"
    with store.session(db):
        pass  # an empty, migrated database: the page is how answers get in
    log = tmp / "server.log"
    with start_app(db, log) as url:
        yield url, db, log


def counts(db: Path) -> tuple[int, int]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return (conn.execute("SELECT count(*) FROM answers").fetchone()[0],
                conn.execute("SELECT count(*) FROM judge_verdicts").fetchone()[0])


def open_import(page: Any, url: str) -> None:
    page.goto(f"{url}/import")
    field = page.get_by_label("Your name")
    # The first visit after the server starts runs the app's imports: on a loaded machine that
    # takes longer than the default 15 s wait.
    field.wait_for(timeout=60_000)
    field.fill("lead ana")
    field.press("Enter")
    page.get_by_text("File of judged answers").wait_for()


def grid_text(page: Any) -> str:
    """The cells of the page's table: the grid draws on a canvas, its accessible table has the text."""
    cells = page.locator('[data-testid="stDataFrame"] [role="gridcell"]')
    cells.first.wait_for(state="attached")
    return "\n".join(cells.all_text_contents())


def upload(page: Any, path: Path) -> None:
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(path))
    page.get_by_text("Detected from the file").wait_for()


def test_invalid_file_shows_problems_and_writes_nothing(app: tuple[str, Path, Path], page: Any) -> None:
    url, db, log = app
    open_import(page, url)
    upload(page, BAD)
    page.get_by_label("Judge prompt version (for records that do not name one)").fill("v1")
    page.get_by_role("button", name="Check file").click()
    page.get_by_text("The file was not imported: nothing was written").wait_for()
    page.locator('[data-testid="stDataFrame"]').wait_for()
    text = grid_text(page)
    # the problems, with their line numbers and fields, as the CLI reports them
    assert "42" in text and "testCases.1.metricsData.1.verboseLogs" in text
    assert "unknown DeepEval verdict 'maybe'" in text
    # the temporary path the upload was saved under never reaches the browser
    assert "calibration-upload-" not in page.content()
    assert page.get_by_role("button", name="Import", exact=True).count() == 0
    assert counts(db) == (0, 0)
    assert not server_errors(log)


def test_deepeval_file_checked_then_imported_and_on_the_dashboard(app: tuple[str, Path, Path],
                                                                  page: Any) -> None:
    url, db, log = app
    page.set_viewport_size({"width": 1280, "height": 720})
    open_import(page, url)
    upload(page, GOOD)
    assert page.get_by_label("Format").input_value() == "DeepEval test run"
    page.get_by_label("Judge prompt version (for records that do not name one)").fill("faith-v1")
    page.get_by_role("button", name="Check file").click()
    page.get_by_text("Checked: nothing has been written yet").wait_for()
    body = page.locator('[data-testid="stMain"]').inner_text()
    assert "answers: 2 new, 0 already present" in body
    assert "deepeval yes → SUPPORTED: 2" in body and "deepeval no → CONTRADICTED: 1" in body
    assert "the prompt version is not in DeepEval's file" in body
    assert counts(db) == (0, 0)  # the check wrote nothing
    page.get_by_role("button", name="Import", exact=True).scroll_into_view_if_needed()
    next_frame(page)
    # The picture to look at; UPDATE_DOCS_SHOT=1 also replaces the README's docs/import.png.
    page.screenshot(path=str(SCREENSHOTS / "import-report.png"))
    if os.environ.get("UPDATE_DOCS_SHOT"):
        page.screenshot(path=str(DOCS_SHOT))
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("Imported.").wait_for()
    assert "answers: 2 new" in page.locator('[data-testid="stMain"]').inner_text()
    assert counts(db) == (2, 4)
    page.get_by_role("link", name="Dashboard").click()  # the same session: still signed in
    run = page.get_by_role("combobox", name="Judge run")
    run.wait_for()
    assert run.input_value() == "gpt-4.1@faith-v1"
    assert not server_errors(log)


@pytest.fixture
def labeled_app(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    """A server of its own over the DeepEval file, imported and labeled SUPPORTED: the dashboard
    opens on the most recently labeled run, which would change what the tests above find."""
    require_browser()
    db, log = tmp_path / "labeled.db", tmp_path / "server.log"
    with store.session(db) as conn:
        adapters.import_file(conn, "deepeval", GOOD, judge_prompt_version="faith-v1")
        for (pk,) in conn.execute("SELECT id FROM claims ORDER BY id").fetchall():
            store.record_label(conn, claim=pk, reviewer="rev", kind="blind", verdict="SUPPORTED")
    with start_app(db, log) as url:
        yield url, db, log


def test_lead_edits_a_reference_answer_before_the_golden_export(labeled_app: tuple[str, Path, Path],
                                                                page: Any) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # here: the module loads without it

    from calibration import export

    url, db, log = labeled_app
    with store.session(db) as conn:
        first = conn.execute("SELECT answer_id FROM claims ORDER BY answer_id LIMIT 1").fetchone()[0]
    # The dashboard computes the whole report (bootstrap included) on every rerun: on a loaded
    # machine a rerun takes longer than the default 15 s wait.
    page.set_default_timeout(60_000)
    open_import(page, url)
    page.get_by_role("link", name="Dashboard").click()
    page.get_by_role("combobox", name="Judge run").wait_for()
    page.get_by_text("By answer check").wait_for()
    # A pick list opened while the page still runs is drawn anew, closed, when the run ends; and
    # the charts above it draw after the run, so a click can land while the list moves down.
    # The option is then not there within seconds, however long the wait: open the list again.
    for _ in range(3):
        wait_for_card(page, ".st-key-dash_export_format")
        page.get_by_role("combobox", name="Format").click()
        option = page.get_by_role("option", name="Golden set JSONL (RAG tests)")
        try:
            option.click(timeout=10_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    else:
        raise AssertionError("the Format pick list never offered the golden export")
    wait_for_card(page, ".st-key-dash_ref_edit")
    page.get_by_text("Edit reference answers").click()
    box = page.get_by_role("textbox", name="Reference answer")
    box.wait_for()
    box.fill("A reference a lead wrote.")
    page.get_by_role("button", name="Save reference answer").click()
    page.get_by_text("Saved: the golden export uses it from now on.").wait_for()
    page.get_by_text("Edited by lead ana").wait_for()
    with store.session(db) as conn:
        assert export.reference_answers(conn) == {first: "A reference a lead wrote."}
        (edit,) = export.reference_history(conn, first)
    assert edit.edited_by == "lead ana"
    assert not server_errors(log)
