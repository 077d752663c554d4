"""The Import page in a real browser: check a DeepEval file, read the report, confirm, find the run.

An invalid file shows its problems with line and field, and writes nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calibration import adapters, store

from ..test_importing import record
from .conftest import (
    ROOT,
    SCREENSHOTS,
    next_frame,
    require_browser,
    server_errors,
    settle,
    start_app,
    wait_for_card,
)

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
        return (
            conn.execute("SELECT count(*) FROM answers").fetchone()[0],
            conn.execute("SELECT count(*) FROM judge_verdicts").fetchone()[0],
        )


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


def in_view(page: Any, locator: Any) -> bool:
    """The element's box lies inside the viewport."""
    box = locator.bounding_box()
    size = page.viewport_size
    return (
        box is not None
        and box["y"] >= 0
        and box["y"] + box["height"] <= size["height"]
        and box["x"] >= 0
        and box["x"] + box["width"] <= size["width"]
    )


def check(page: Any) -> Any:
    """Press Check file; the dialog the result is shown in, in view."""
    page.get_by_role("button", name="Check file").click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    return dialog


def pick(page: Any, label: str, option: str) -> None:
    for _ in range(3):  # a rerun redrawing the box may swallow the first click
        settle(page)
        page.get_by_role("combobox", name=label, exact=True).click()
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=5_000)
        except Exception:
            page.keyboard.press("Escape")
            continue
        settle(page)
        return
    raise AssertionError(f"could not pick {option!r} for {label!r}")


def upload(page: Any, path: Path) -> None:
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(path))
    page.get_by_text("Detected from the file").wait_for()


def test_empty_home_page_links_to_the_import_page(app: tuple[str, Path, Path], page: Any) -> None:
    url, db, log = app
    if counts(db)[0]:
        pytest.skip("needs the empty database the module starts with")
    page.goto(url)
    page.get_by_text("Nothing loaded yet").wait_for()
    page.get_by_role("link", name="Import judged answers").click()
    page.wait_for_url(f"{url}/import")
    field = page.get_by_label("Your name")
    field.fill("lead ana")
    field.press("Enter")
    page.get_by_text("File of judged answers").wait_for()
    assert not server_errors(log)


def test_invalid_file_shows_problems_and_writes_nothing(app: tuple[str, Path, Path], page: Any) -> None:
    url, db, log = app
    open_import(page, url)
    upload(page, BAD)
    page.get_by_label("Judge prompt version (for records that do not name one)").fill("v1")
    dialog = check(page)
    dialog.get_by_text("The file was not imported: nothing was written").wait_for()
    dialog.locator('[data-testid="stDataFrame"]').wait_for()
    assert in_view(page, dialog)
    text = grid_text(page)
    # the problems, with their line numbers and fields, as the CLI reports them
    assert "42" in text and "testCases.1.metricsData.1.verboseLogs" in text
    assert "unknown DeepEval verdict 'maybe'" in text
    # the temporary path the upload was saved under never reaches the browser
    assert "calibration-upload-" not in page.content()
    assert page.get_by_role("button", name="Import", exact=True).count() == 0
    assert counts(db) == (0, 0)
    assert not server_errors(log)


def test_deepeval_file_checked_then_imported_and_on_the_dashboard(
    app: tuple[str, Path, Path], page: Any
) -> None:
    url, db, log = app
    page.set_viewport_size({"width": 1280, "height": 720})
    open_import(page, url)
    upload(page, GOOD)
    assert page.get_by_label("Format").input_value() == "DeepEval test run"
    page.get_by_label("Judge prompt version (for records that do not name one)").fill("faith-v1")
    dialog = check(page)
    dialog.get_by_text("Checked: nothing has been written yet").wait_for()
    assert in_view(page, dialog.get_by_text("What the import writes"))
    body = dialog.inner_text()
    assert "answers: 2 new, 0 already present" in body
    assert "deepeval yes → SUPPORTED: 2" in body and "deepeval no → CONTRADICTED: 1" in body
    assert "the prompt version is not in DeepEval's file" in body
    assert counts(db) == (0, 0)  # the check wrote nothing
    page.get_by_role("button", name="Import", exact=True).scroll_into_view_if_needed()
    next_frame(page)
    # The picture to look at; UPDATE_DOCS_SHOT=1 also replaces the manual's docs/import.png.
    page.screenshot(path=str(SCREENSHOTS / "import-report.png"))
    if os.environ.get("UPDATE_DOCS_SHOT"):
        page.screenshot(path=str(DOCS_SHOT))
    dialog.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("Imported.").wait_for()
    assert "answers: 2 new" in page.locator('[data-testid="stMain"]').inner_text()
    assert counts(db) == (2, 4)
    page.get_by_role("link", name="Dashboard").click()  # the same session: still signed in
    run = page.get_by_role("combobox", name="Judge run")
    run.wait_for()
    assert run.input_value() == "gpt-4.1@faith-v1"
    assert not server_errors(log)


def test_a_problem_of_every_record_is_one_row_with_its_count(
    app: tuple[str, Path, Path], page: Any, tmp_path: Path
) -> None:
    url, _db, log = app
    src = tmp_path / "no_model.jsonl"
    src.write_text(
        "".join(
            json.dumps({k: v for k, v in record(i).items() if k != "judge_model"}) + "\n" for i in range(1, 6)
        ),
        encoding="utf-8",
    )
    open_import(page, url)
    upload(page, src)
    dialog = check(page)
    dialog.get_by_text("The file was not imported: nothing was written").wait_for()
    dialog.locator('[data-testid="stDataFrame"]').wait_for()
    grid_text(page)  # drawn
    cells = [
        c.strip() for c in dialog.locator('[data-testid="stDataFrame"] [role="gridcell"]').all_text_contents()
    ]
    assert sum(c == "judge_model" for c in cells) == 1  # said once, not once per record
    assert "1, 2, 3 and 2 more" in cells and "5" in cells
    assert "None" not in cells  # a problem without a line has an empty cell
    assert "put it in the file or set the Judge model field" in "\n".join(cells)
    assert not server_errors(log)


def test_a_problem_names_the_page_control_where_the_cli_names_its_flag(
    app: tuple[str, Path, Path], page: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _db, log = app
    src = tmp_path / "windows.jsonl"  # a Windows export, uploaded with the encoding left at UTF-8
    src.write_bytes((json.dumps(record(1), ensure_ascii=False) + "\n").encode("cp1251"))
    open_import(page, url)
    upload(page, src)
    dialog = check(page)
    dialog.get_by_text("The file was not imported: nothing was written").wait_for()
    dialog.locator('[data-testid="stDataFrame"]').wait_for()
    text = grid_text(page)
    assert "the file is not UTF-8: give its encoding with the Encoding choice above" in text
    assert "--encoding" not in text
    from calibration.cli import main

    capsys.readouterr()
    assert main(["--db", str(tmp_path / "cli.db"), "import", str(src)]) == 1
    assert "the file is not UTF-8: give its encoding with --encoding" in capsys.readouterr().err
    assert not server_errors(log)


def test_table_mapped_by_dropdowns_in_its_encoding(
    app: tuple[str, Path, Path], page: Any, tmp_path: Path
) -> None:
    url, db, log = app
    page.set_viewport_size({"width": 1280, "height": 720})
    src = tmp_path / "claims.csv"  # a Windows export: Cyrillic in Windows-1251, its own column names
    src.write_bytes((DATA / "claims_table.csv").read_text(encoding="utf-8").encode("cp1251"))
    before = counts(db)
    open_import(page, url)
    upload(page, src)
    assert page.get_by_label("Format").input_value() == "Claim-per-row table (CSV, TSV, Parquet)"
    pick(page, "Encoding", "Windows-1251 (Cyrillic)")
    page.get_by_text("The first rows of the file").wait_for()
    assert "Какой срок гарантии?" in grid_text(page)  # the preview, decoded
    for field, column in [
        ("answer_id *", "qid"),
        ("question *", "q"),
        ("answer *", "resp"),
        ("chunks", "ctx"),
        ("claim *", "statement"),
        ("verdict *", "label"),
        ("rationale", "why"),
        ("judge_model", "model"),
        ("judge_prompt_version", "prompt"),
    ]:
        pick(page, field, column)
    page.get_by_text("The first rows of the file").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "import-columns.png"))
    dialog = check(page)
    dialog.get_by_text("Checked: nothing has been written yet").wait_for()
    assert in_view(page, dialog.get_by_text("What the import writes"))
    assert "answers: 2 new" in dialog.inner_text()
    assert counts(db) == before
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


def test_lead_edits_a_reference_answer_before_the_golden_export(
    labeled_app: tuple[str, Path, Path], page: Any
) -> None:
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
