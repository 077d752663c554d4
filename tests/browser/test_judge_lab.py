"""The judge lab in a real Chromium: a lead revises the prompt for the WiCE gpt-4 labels, runs
it against the local stub endpoint, reads the holdout verdict first, stops the run mid-way and
resumes it, switches the baseline; the dashboard lists no holdout claim while it is sealed."""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from calibration import judge, split, store
from calibration.importing import import_answers, import_labels
from calibration.store import lab as lab_store

from ..judge_stub import StubServer
from .conftest import (
    ROOT,
    SCREENSHOTS,
    WAIT_MS,
    next_frame,
    require_browser,
    server_errors,
    settled,
    start_app,
)

pytestmark = pytest.mark.browser

WICE = ROOT / "data" / "wice"
GPT4 = "gpt-4-0613@wice-gpt4"
GPT35 = "gpt-3.5-turbo-0613@wice-gpt35"


@dataclass
class Lab:
    url: str
    db: Path
    log: Path
    stub: StubServer


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    require_browser()
    d = tmp_path_factory.mktemp("judge_lab")
    db = d / "app.db"
    with store.session(db) as conn:
        import_answers(conn, WICE / "wice_judged_gpt4.jsonl")
        import_answers(conn, WICE / "wice_judged_gpt35.jsonl")
        import_labels(conn, WICE / "wice_human_labels.csv")
    with (WICE / "wice_human_labels.csv").open(encoding="utf-8") as fh:
        humans = {r["claim_id"]: r["verdict"] for r in csv.DictReader(fh)}
    # The "revised prompt": the stub answers as the reviewers did on most claims.
    revised = {c: v for i, (c, v) in enumerate(sorted(humans.items())) if i % 5}
    with (
        StubServer(verdicts=revised, record=False, latency=0.15) as stub,
        start_app(db, d / "server.log") as url,
    ):
        yield Lab(url, db, d / "server.log", stub)


@pytest.fixture
def sealed(lab: Lab) -> None:
    """The holdout sealed before the page opens (as the Seal button or a first run does)."""
    with store.session(lab.db) as db:
        if split.current(db).generation is None:
            split.seal(db, created_by="lead")


@pytest.fixture
def page(lab: Lab) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    from .conftest import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        pg = b.new_page(viewport={"width": 1280, "height": 720})
        pg.set_default_timeout(WAIT_MS)
        pg.goto(f"{lab.url}/judge_lab")
        name = pg.get_by_label("Your name")
        name.fill("lead")
        name.press("Enter")
        pg.get_by_text("Tuning and holdout claims").wait_for()
        try:
            yield pg
        finally:
            b.close()


def fill(page: Any, key: str, value: str) -> None:
    field = page.locator(f".st-key-{key} input, .st-key-{key} textarea").first
    field.fill(value)


def choose(page: Any, key: str, option: str) -> None:
    settled(page)
    box = page.locator(f".st-key-{key} input").first
    for _ in range(3):  # a rerun redrawing the box may swallow the first click
        box.click()
        try:
            page.get_by_role("option", name=option, exact=False).first.click(timeout=5_000)
            return
        except Exception:
            page.keyboard.press("Escape")
            settled(page)
    raise AssertionError(f"could not choose {option!r} in {key}")


def grid_cells(page: Any, key: str | None = None) -> list[str]:
    """Text of the cells a dataframe draws (its accessible table: the grid is a canvas)."""
    scope = f".st-key-{key} " if key else ""
    return page.locator(f"{scope}[data-testid='stDataFrame'] table [role='gridcell']").all_inner_texts()


def body(page: Any) -> str:
    return page.locator("body").inner_text()


def main_text(page: Any) -> str:
    """The page's main block (not a toast still showing the verdict against the default baseline)."""
    return page.locator('[data-testid="stMain"]').inner_text()


def in_view(page: Any, locator: Any) -> bool:
    """The element's box lies inside the viewport (the main block scrolls, not the window)."""
    box = locator.bounding_box()
    size = page.viewport_size
    return (
        box is not None
        and box["y"] >= 0
        and box["y"] + box["height"] <= size["height"]
        and box["x"] >= 0
        and box["x"] + box["width"] <= size["width"]
    )


def toast_in_view(page: Any, pattern: str) -> None:
    """Wait for a toast saying `pattern` (a regex) whose box lies inside the viewport, checked in
    one go: a progress toast is replaced by the next one at any moment."""
    page.wait_for_function(
        """(pattern) => [...document.querySelectorAll('[data-testid="stToast"]')]
        .some(e => { const r = e.getBoundingClientRect();
                     return new RegExp(pattern).test(e.innerText) && r.height > 0 && r.top >= 0
                         && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth; })""",
        arg=pattern,
    )


def confirm_send(page: Any, requests: int) -> None:
    """The confirm step after Run: a dialog in view with the cost; press its Send button."""
    dialog = page.get_by_role("dialog")
    dialog.get_by_text(f"Before the run: about to send {requests} requests").wait_for()
    assert in_view(page, dialog)
    dialog.get_by_role("button", name=f"Send {requests} requests").click()


def test_revise_run_stop_resume_switch_baseline(lab: Lab, page: Any) -> None:
    # The lead's revision: the shipped template with few-shot examples from the corrections.
    text = judge.load_template("grounding-v1").text + "\n\nExamples corrected by reviewers:\n{examples}\n"
    page.locator(".st-key-lab_template_text textarea").fill(text)
    page.locator(".st-key-lab_template_text textarea").blur()
    settled(page)
    fill(page, "lab_base_url", lab.stub.base_url)
    fill(page, "lab_model", "stub-judge")
    fill(page, "lab_version", "wice-revised-v2")
    fill(page, "lab_key_env", "")
    page.locator(".st-key-lab_key_env input").blur()
    # Both WiCE runs have 100 labeled claims: the page asks which one this prompt revises, in
    # the box (its placeholder, drawn only while nothing is chosen), so the note goes with the choice.
    box = page.locator(".st-key-lab_revises input").first
    assert "never settled by a tie-break" in (box.get_attribute("placeholder") or "")
    choose(page, "lab_revises", GPT4)
    settled(page)
    assert "never settled by a tie-break" not in body(page)
    page.locator(".st-key-lab_concurrency input").fill("1")

    # Run, and stop it mid-way.
    page.locator(".st-key-lab_run_submit button").click()
    confirm_send(page, 100)
    page.get_by_text("Before the run: about to send 100 requests").wait_for()
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stProgress"]')]
        .some(e => /^([5-9]|[1-9][0-9]) \\/ 100 answers/.test(e.innerText))""")
    page.locator(".st-key-lab_stop button").first.click()
    page.get_by_text("The run was stopped.").wait_for()
    settled(page)
    with store.session(lab.db) as db:
        run = store.find_judge_run(db, "stub-judge@wice-revised-v2")
        done = lab_store_totals(db, run.id)
    assert 0 < done < 100
    # The page counted before the call in flight at the stop (concurrency 1) was stored.
    shown = re.search(r"stub-judge@wice-revised-v2: (\d+) answers judged", body(page))
    assert shown and done - 1 <= int(shown.group(1)) <= done

    # Resume: only the rest is requested.
    lab.stub.latency = 0.0
    page.locator(".st-key-lab_run_submit button").click()
    confirm_send(page, 100 - done)
    page.get_by_text("Verdict on the holdout").wait_for()
    settled(page)
    text_now = body(page)
    assert f"({done} already judged, not requested again)" in text_now
    assert "Run stub-judge@wice-revised-v2 (resumed)" in text_now
    # The holdout verdict comes first, above the table against every run.
    verdict_at = text_now.index("Verdict on the holdout")
    assert verdict_at < text_now.index("Against every run sharing labeled claims")
    assert "claims the lead never saw, the new prompt is right" in text_now[verdict_at:]
    assert "After the run: tokens used:" in text_now
    assert f"Default baseline: the run this prompt revises ({GPT4})." in text_now
    page.get_by_text("Verdict on the holdout").evaluate("e => e.scrollIntoView({block: 'start'})")
    next_frame(page)
    path = SCREENSHOTS / "judge_lab.png"
    page.screenshot(path=str(path))
    if os.environ.get("JUDGE_LAB_DOCS_SHOT"):
        page.screenshot(path=str(ROOT / "docs" / "judge_lab.png"))

    # Switch the baseline: the verdict is now against gpt-3.5.
    with store.session(lab.db) as db:
        run = store.find_judge_run(db, "stub-judge@wice-revised-v2")
        new_base = judge.compare_runs(db, run, store.find_judge_run(db, GPT35))
    choose(page, "lab_cmp_baseline", GPT35)
    settled(page)
    page.get_by_text(new_base.headline(), exact=True).wait_for()
    settled(page)  # the new headline is drawn mid-run: the old run's rows go when it ends
    assert "Default baseline:" not in body(page)  # shown only while the default is picked
    with store.session(lab.db) as db:
        old_base = judge.compare_runs(db, run, store.find_judge_run(db, GPT4))
    assert old_base.headline() != new_base.headline() and old_base.headline() not in main_text(page)
    assert not server_errors(lab.log)


def test_edit_then_one_run_press_confirms_the_cost_before_any_request(
    lab: Lab, sealed: None, page: Any
) -> None:
    fill(page, "lab_base_url", lab.stub.base_url)
    fill(page, "lab_model", "stub-once")
    fill(page, "lab_version", "once-v1")
    fill(page, "lab_key_env", "")
    choose(page, "lab_revises", GPT4)
    choose(page, "lab_scope", "Holdout claims only")
    # The edit is the last thing typed: pressing Run is also what commits it.
    marker = "Judge the holdout strictly."
    page.locator(".st-key-lab_template_text textarea").fill(
        judge.load_template("grounding-v1").text + "\n" + marker + "\n"
    )
    lab.stub.latency = 0.05
    before = lab.stub.count
    page.locator(".st-key-lab_run_submit button").click()  # once
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Before the run: about to send").wait_for()
    settled(page)
    assert in_view(page, dialog)
    assert lab.stub.count == before, "a request was sent before the cost was confirmed"
    with store.session(lab.db) as db:
        assert "stub-once@once-v1" not in {r.name for r in lab_store.lab_runs(db)}
    dialog.get_by_role("button", name=re.compile(r"^Send \d+ requests$")).click()
    # The progress, then the holdout verdict, in view while the form is where it was.
    toast_in_view(page, r"\d+ / \d+ answers done")
    toast_in_view(page, "claims the lead never saw")
    assert lab.stub.count > before
    settled(page)
    with store.session(lab.db) as db:
        run = store.find_judge_run(db, "stub-once@once-v1")
        ids = lab_store.ok_answer_ids(db, run.id)
        call = lab_store.get_call(db, run.id, sorted(ids)[0])
    assert call is not None and marker in call["prompt"]  # the edit was applied, not swallowed
    assert not server_errors(lab.log)


def lab_store_totals(db: Any, run_id: int) -> int:
    return lab_store.run_totals(db, run_id).answers_ok


def test_dashboard_lists_no_holdout_claim_while_sealed(lab: Lab, sealed: None, page: Any) -> None:
    with store.session(lab.db) as db:
        s = split.current(db)
    assert s.sealed and len(s.holdout) == 50
    page.get_by_role("link", name="Dashboard").click()  # in-app: the sign-in is kept
    page.get_by_text("Disagreements", exact=True).first.wait_for()
    settled(page)
    page.locator(".st-key-dash_disagreements").scroll_into_view_if_needed()
    # The grid draws on a canvas; its accessible table fills in once it is on screen.
    page.locator(
        ".st-key-dash_disagreements [data-testid='stDataFrame'] table [role='gridcell']"
    ).first.wait_for(state="attached")
    cells = grid_cells(page, "dash_disagreements")
    shown = {c for c in cells if c.startswith("test")}
    assert shown, "the disagreement table drew no answer ids"
    assert not shown & set(s.holdout)
    assert not set(s.holdout) & {w.strip(".,;") for w in body(page).split()}
