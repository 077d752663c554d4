"""At 1280×720 every table of the Dashboard and the Judge lab fits the main block: none reaches
past its right edge, and no grid scrolls sideways (columns hidden on the right). The WiCE runs,
labeled by two reviewers who differ on some claims (so the claim lists hold two verdicts), and a
lab run against the stub endpoint; on the way, the lab's first run seals the holdout only once
the lead confirms it."""

from __future__ import annotations

import csv
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from calibration import split, store
from calibration.importing import import_answers, import_labels

from ..judge_stub import StubServer
from .conftest import ROOT, SCREENSHOTS, Tabs, next_frame, settled, start_app
from .test_judge_lab import choose, fill

pytestmark = pytest.mark.browser

WICE = ROOT / "data" / "wice"
GPT4 = "gpt-4-0613@wice-gpt4"
GPT35 = "gpt-3.5-turbo-0613@wice-gpt35"

# Each drawn grid: [header, its right edge, the main block's content right edge, the grid's
# scroll width, its visible width]. A grid in a closed expander is not visible and is left out.
_GRIDS = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const right = main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight);
  return [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')]
    .filter((e) => e.checkVisibility())
    .map((e) => {
      const grid = e.querySelector('.dvn-scroller');
      const head = e.querySelector('[role="columnheader"]');
      return [head ? head.innerText : '', e.getBoundingClientRect().right, right,
              grid ? grid.scrollWidth : null, grid ? grid.clientWidth : null];
    });
}"""


# Each drawn button whose label is cut (an element in it narrower than its text): [label, px].
_CUT_LABELS = """() => [...document.querySelectorAll('[data-testid="stMain"] button')]
    .filter((b) => b.checkVisibility())
    .flatMap((b) => [b, ...b.querySelectorAll('*')]
        .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
        .map((e) => [b.innerText, e.scrollWidth - e.clientWidth]))"""


def cut_labels(page: Any) -> list[list[Any]]:
    """The buttons whose label is cut with an ellipsis, with the pixels missing."""
    next_frame(page)
    return page.evaluate(_CUT_LABELS)


def cut_off(page: Any) -> list[str]:
    """The tables cut off on the right, each named by its first column's header."""
    tables = page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]')
    tables.first.wait_for()  # a table the run drew may reach the page after its text
    for table in tables.all():
        if table.is_visible():
            table.scroll_into_view_if_needed()
            table.locator(".dvn-scroller").wait_for(state="attached")
    next_frame(page)
    grids = page.evaluate(_GRIDS)
    assert grids, "no table drawn"
    return [
        f"{head}: right edge {right:.0f} (main block's {edge:.0f}); content {scroll} px wide in {width} px"
        for head, right, edge, scroll, width in grids
        if right > edge + 1 or scroll > width + 1
    ]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fit")
    with (WICE / "wice_human_labels.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    second = d / "second.csv"
    with second.open("w", newline="", encoding="utf-8") as fh:
        out = csv.DictWriter(fh, fieldnames=list(rows[0]))
        out.writeheader()
        for i, row in enumerate(rows):  # a second reviewer who differs on every fourth claim
            flipped = "UNSUPPORTED" if row["verdict"] == "SUPPORTED" else "SUPPORTED"
            out.writerow({**row, "reviewer": "second", "verdict": flipped if i % 4 == 0 else row["verdict"]})
    db = d / "pristine.db"
    with store.session(db) as conn:
        import_answers(conn, WICE / "wice_judged_gpt4.jsonl")
        import_answers(conn, WICE / "wice_judged_gpt35.jsonl")
        import_labels(conn, WICE / "wice_human_labels.csv")
        import_labels(conn, second)
    return db


@pytest.fixture
def app(pristine: Path, tmp_path: Path) -> Iterator[tuple[str, Path, StubServer]]:
    """A server of its own on a copy of the database, and the stub endpoint answering as the
    first reviewer did."""
    db = tmp_path / "app.db"
    shutil.copyfile(pristine, db)
    with (WICE / "wice_human_labels.csv").open(encoding="utf-8") as fh:
        humans = {r["claim_id"]: r["verdict"] for r in csv.DictReader(fh)}
    with StubServer(verdicts=humans, record=False) as stub, start_app(db, tmp_path / "server.log") as url:
        yield url, db, stub


def open_as_lead(tabs: Tabs, url: str) -> Any:
    page = tabs.open(1280, 720)
    page.goto(url)
    name = page.get_by_label("Your name")
    name.fill("lead")
    name.press("Enter")
    name.wait_for(state="detached")
    settled(page)
    return page


def split_made(db: Path) -> bool:
    with store.session(db) as conn:
        return split.current(conn).generation is not None


def test_the_judge_lab_fits_and_its_first_run_seals_the_holdout_once_confirmed(
    app: tuple[str, Path, StubServer], tabs: Tabs
) -> None:
    url, db, stub = app
    page = open_as_lead(tabs, f"{url}/judge_lab")
    page.get_by_text("Sealed holdout: none yet").wait_for()
    assert not split_made(db)  # opening the page sealed nothing
    assert cut_labels(page) == []  # "Revert to the shipped text" whole beside its caption
    fill(page, "lab_base_url", stub.base_url)
    fill(page, "lab_model", "stub-judge")
    fill(page, "lab_version", "fit-v1")
    fill(page, "lab_key_env", "")
    choose(page, "lab_revises", GPT4)
    page.locator(".st-key-lab_run_submit button").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text(
        "Send seals a holdout first. Seal a holdout: 50 labeled answers of 100 (50%)"
    ).wait_for()
    assert not split_made(db)  # Run planned the run; only Send seals
    dialog.get_by_role("button", name="Send 100 requests").click()
    page.get_by_text("Against every run sharing labeled claims").wait_for()
    settled(page)
    assert split_made(db)
    page.get_by_text("Endpoint and times of each run").click()
    settled(page)
    assert cut_off(page) == []
    page.get_by_text("Verdict on the holdout").scroll_into_view_if_needed()
    next_frame(page)
    page.screenshot(path=str(SCREENSHOTS / "fit-judge-lab.png"))
    signed_in = urlsplit(page.url).query  # a new session keeps the sign-in from the link
    page.goto(f"{url}/judge_lab?{signed_in}&run={GPT35}&focus=disagreements")
    page.get_by_text("Where the run disagrees with reviewers").wait_for()
    page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').first.wait_for()  # its table
    settled(page)
    assert cut_off(page) == []


def test_every_dashboard_table_fits(app: tuple[str, Path, StubServer], tabs: Tabs) -> None:
    url, _db, _stub = app
    page = open_as_lead(tabs, f"{url}/dashboard?run={GPT35}")
    page.locator(".st-key-dash_disagreements [data-testid='stDataFrame']").wait_for()  # the last table
    for expander in ("How this is computed", "The reconcile counts behind the slips"):
        page.get_by_text(expander).first.click()
    settled(page)
    page.get_by_text("Claims behind:").first.wait_for()
    assert cut_off(page) == []
    page.locator(".st-key-dash_disagreements").scroll_into_view_if_needed()
    next_frame(page)
    page.screenshot(path=str(SCREENSHOTS / "fit-dashboard.png"))
