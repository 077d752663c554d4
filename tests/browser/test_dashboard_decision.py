"""The Dashboard's decision header and the results of its actions, at 1280×720 in real Chromium.

One server for the module over the demo run: one closed cycle labeled by two reviewers, one
claim they dispute (the lead settles it here). Each action's result must be inside the viewport
right after the action: a lead who clicks low on a long page must see what happened.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from calibration import cycles, store
from calibration.importing import import_answers
from tests.conftest import DEMO

from .conftest import WAIT_MS, settle, sign_in_at, start_app

RUN = "demo-judge@grounding-v1"
VIEW = {"width": 1280, "height": 720}
INTERVAL = re.compile(r"\d+(?:\.\d+)?%–\d+(?:\.\d+)?%")
PERCENT = re.compile(r"\d+(?:\.\d+)?%")
DIRECTION = re.compile(r"misses \S+%, invents \S+% of claims: [+-]?[\d.]+ points(, 95% CI \S+ to \S+)?")


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("dash")
    db_path = tmp / "calibration.db"
    with store.session(db_path) as db:
        import_answers(db, DEMO)
        cyc = cycles.create_cycle(db, name="week 1", judge_run=RUN, size=5, seed=1, force=True)
        for answer, claim, reviewer, verdict in (
            ("Q1", "c1", "ann", "SUPPORTED"),
            ("Q1", "c2", "ann", "UNSUPPORTED"),
            ("Q2", "c1", "ann", "SUPPORTED"),
            ("Q2", "c2", "ann", "CONTRADICTED"),
            ("Q2", "c2", "bob", "CONTRADICTED"),
            ("Q3", "c1", "ann", "SUPPORTED"),
            ("Q3", "c1", "bob", "UNSUPPORTED"),
            ("Q4", "c1", "bob", "SUPPORTED"),
        ):
            store.record_label(
                db,
                claim=store.claim_pk(db, answer, claim),
                reviewer=reviewer,
                kind="blind",
                verdict=verdict,
                cycle_id=cyc.id,
            )
        # Closed: the lead has no open work in it, so every scope is drawn for them.
        cycles.close_cycle(db, "week 1", force=True)
    with start_app(db_path, tmp / "streamlit.log") as url:
        yield url


def in_view(locator: Any) -> bool:
    box = locator.bounding_box()
    return (
        box is not None
        and box["y"] >= 0
        and box["y"] + box["height"] <= VIEW["height"]
        and box["x"] >= 0
        and box["x"] + box["width"] <= VIEW["width"]
    )


def open_dashboard(page: Any, url: str) -> Any:
    sign_in_at(page, f"{url}/dashboard", "lead")
    header = page.locator(".st-key-decision")
    header.wait_for()
    settle(page)
    return header


def test_the_decision_header_shows_one_agreement_figure_with_one_interval(
    app_url: str, small_page: Any
) -> None:
    header = open_dashboard(small_page, app_url)
    assert in_view(header.get_by_test_id("stMetricLabel"))
    text = header.inner_text()
    assert len(set(INTERVAL.findall(text))) == 1, text
    figure = header.locator('[data-testid="stMetricValue"]').inner_text().strip()
    # Every judge-agreement percentage in the header is that one figure: the sentence repeats it.
    sentence = re.search(r"agrees with reviewers on (\S+%)", text)
    assert sentence is not None and sentence.group(1) == figure
    # The direction's shares are another figure, named as such (`assessment.direction_answer`).
    assert DIRECTION.search(text), text
    outside = INTERVAL.sub("", DIRECTION.sub("", text)).replace("95% interval", "")
    assert {p for p in PERCENT.findall(outside)} <= {
        figure,
        *re.findall(r"agree with each other on (\S+%)", text),
    }
    # The next steps sit right under it.
    assert in_view(small_page.get_by_role("link", name="Plan the next cycle"))


def test_an_adjudication_says_so_in_view(app_url: str, small_page: Any) -> None:
    open_dashboard(small_page, app_url)
    small_page.get_by_text("Settle the 1 unclear claim").click()
    verdict = small_page.get_by_role("combobox", name="Verdict").first
    verdict.scroll_into_view_if_needed()
    verdict.click()
    small_page.get_by_role("option", name="UNSUPPORTED").click()
    small_page.get_by_role("button", name="Adjudicate").first.click()
    toast = small_page.get_by_text("Adjudication recorded: the figures include it now.").first
    toast.wait_for()
    assert in_view(toast)


def test_an_export_says_so_in_view_and_names_its_scope_and_day(app_url: str, small_page: Any) -> None:
    open_dashboard(small_page, app_url)
    button = small_page.locator('[data-testid="stDownloadButton"] button')
    button.scroll_into_view_if_needed()
    # The export is built when the button is pressed: on a loaded machine that can take a while,
    # so the bound is generous (the wait ends at the download event, not at the bound).
    with small_page.expect_download(timeout=180_000) as download:
        button.click()
    name = download.value.suggested_filename
    assert re.fullmatch(r"calibration-demo-judge_grounding-v1-jsonl-\d{4}-\d\d-\d\d\.jsonl", name), name
    toast = small_page.get_by_text(f"Export downloaded: {name}").first
    toast.wait_for()
    assert in_view(toast)


def test_plan_the_next_cycle_opens_a_prefilled_form_and_creating_says_so_in_view(
    app_url: str, small_page: Any
) -> None:
    open_dashboard(small_page, app_url)
    small_page.get_by_role("link", name="Plan the next cycle").click()
    small_page.get_by_text("Prefilled from the Dashboard").wait_for()
    settle(small_page)
    shown = small_page.get_by_role("combobox", name="Strategy").evaluate(
        "e => (e.value || '') + ' ' + (e.parentElement.parentElement.parentElement.textContent || '')"
    )
    assert "planned" in shown, shown
    small_page.get_by_label("Name").fill("week 2")
    # Assigned to a reviewer: the lead gets no open work, so the other tests' Dashboard stays drawn.
    small_page.get_by_role("textbox", name="Reviewers", exact=True).fill("ann")
    create = small_page.get_by_role("button", name="Create cycle")
    create.scroll_into_view_if_needed()
    create.click()
    toast = small_page.locator('[data-testid="stToast"]').first
    toast.wait_for()
    assert in_view(toast)
    assert "Cycle created" in toast.inner_text() or "not created" in toast.inner_text()


def test_a_closed_cycle_shows_the_same_decision_header(app_url: str, small_page: Any) -> None:
    sign_in_at(small_page, f"{app_url}/cycles?cycle=week+1", "lead")
    header = small_page.locator(".st-key-decision")
    header.wait_for()
    assert len(set(INTERVAL.findall(header.inner_text()))) == 1


# Per table on the page: how far it reaches right, and how much of it scrolls out sideways.
_TABLES = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')]
    .filter(e => e.getBoundingClientRect().width > 0)
    .map(e => { const s = e.querySelector('.dvn-scroller'); const r = e.getBoundingClientRect();
                return {right: r.right, hidden: s ? s.scrollWidth - s.clientWidth : 0,
                        head: (e.querySelector("thead") || e).textContent.slice(0, 80)}; })"""


def test_no_table_on_the_dashboard_is_cut_off_on_the_right(app_url: str, small_page: Any) -> None:
    open_dashboard(small_page, app_url)
    small_page.locator('[data-testid="stDataFrame"]').last.scroll_into_view_if_needed()
    settle(small_page)
    tables = small_page.evaluate(_TABLES)
    assert len(tables) >= 4, tables  # per class, by category, by answer check, reviewers, disagreements
    # A pixel of rounding at most: the grid scrolls sideways when a column is left over.
    cut = [t for t in tables if t["right"] > VIEW["width"] or t["hidden"] > 1]
    assert not cut, cut


def test_no_table_on_the_cycles_page_is_cut_off_on_the_right(app_url: str, small_page: Any) -> None:
    sign_in_at(small_page, f"{app_url}/cycles?cycle=week+1", "lead")
    small_page.locator(".st-key-decision").wait_for()
    small_page.get_by_text("Answers in cycle order").click()  # its table too
    small_page.locator('[data-testid="stDataFrame"]').last.scroll_into_view_if_needed()
    settle(small_page)
    # The cycles list, the per-reviewer table and the answers in cycle order (the expander's
    # grid draws its header a moment after the expander opens).
    small_page.wait_for_function(
        f"() => {{ const h = ({_TABLES})().map(t => t.head).join(' | ');"
        " return ['Labeled outside', 'Unclear', 'Chance of being drawn'].every(w => h.includes(w)); }",
        timeout=WAIT_MS,
    )
    tables = small_page.evaluate(_TABLES)
    cut = [t for t in tables if t["right"] > VIEW["width"] or t["hidden"] > 1]
    assert not cut, cut
