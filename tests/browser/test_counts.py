"""One count, one source: the Dashboard, the Cycles page and the Judge lab give the same claim
counts for the same data, in real Chromium at 1280×720, with the holdout sealed and unsealed.

The data: both WiCE runs with the reviewers' labels, the lab's split stratified by gpt-4, and a
closed cycle over every answer of the gpt-4 run. The expected counts are computed here from the
label file and the judged file, not by the code under test.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from calibration import cycles, split, store
from calibration.importing import import_answers, import_labels

from .conftest import ROOT, require_browser, settle, sign_in_at, start_app

pytestmark = pytest.mark.browser

WICE = ROOT / "data" / "wice"
GPT4 = "gpt-4-0613@wice-gpt4"
VIEW = {"width": 1280, "height": 720}
COUNTS = re.compile(
    r"On ([\d,]+) labeled claims?: ([\d,]+) disagreeing"
    r"(?: \(([\d,]+) of them in the sealed holdout, not listed\))?"
)


@dataclass(frozen=True)
class Counted:
    url: str
    db: Path
    labeled: int
    disagreeing: int
    sealed: int  # disagreeing claims of holdout answers while the holdout is sealed, else 0


def _expected(holdout: set[str], sealed: bool) -> tuple[int, int, int]:
    """(labeled, disagreeing, disagreeing in the sealed holdout) from the files themselves."""
    with (WICE / "wice_human_labels.csv").open(encoding="utf-8") as fh:
        human = {(r["answer_id"], r["claim_id"]): r["verdict"] for r in csv.DictReader(fh)}
    judged = {}
    with (WICE / "wice_judged_gpt4.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            judged.update({(rec["id"], c["id"]): c["verdict"] for c in rec["claims"]})
    both = [k for k in human if k in judged]
    differ = [k for k in both if human[k] != judged[k]]
    return len(both), len(differ), sum(k[0] in holdout for k in differ) if sealed else 0


@pytest.fixture(scope="module", params=[True, False], ids=["sealed", "unsealed"])
def counted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Counted]:
    require_browser()
    sealed = bool(request.param)
    tmp = tmp_path_factory.mktemp("counts")
    db = tmp / "app.db"
    with store.session(db) as conn:
        import_answers(conn, WICE / "wice_judged_gpt4.jsonl")
        import_answers(conn, WICE / "wice_judged_gpt35.jsonl")
        import_labels(conn, WICE / "wice_human_labels.csv")
        s = split.ensure_split(conn, created_by="lead", stratify_run=store.find_judge_run(conn, GPT4))
        if not sealed:
            split.unseal(conn, who="lead", reason="the counts test")
        # Every answer of the run, assigned to a reviewer (the lead has no open work in it), closed.
        cycles.create_cycle(
            conn,
            name="all",
            judge_run=GPT4,
            size=100,
            seed=1,
            strategy="random",
            reviewers=["ann"],
            overlap=0.0,
            include_labeled=True,
            force=True,
            created_by="lead",
        )
        cycles.close_cycle(conn, "all", force=True)
    labeled, disagreeing, in_holdout = _expected(set(s.holdout), sealed)
    assert labeled == 100 and disagreeing > 0 and (in_holdout > 0) == sealed  # the data tells cases apart
    with start_app(db, tmp / "server.log") as url:
        yield Counted(url, db, labeled, disagreeing, in_holdout)


def counts_on(page: Any, url: str, where: Any = None) -> tuple[int, int, int]:
    """Open `url` signed in, and read the counts line (in `where`, a locator maker, if given)."""
    sign_in_at(page, url, "lead")
    scope = page.locator('[data-testid="stMain"]') if where is None else where(page)
    scope.get_by_text(COUNTS).first.wait_for()
    settle(page)
    found = COUNTS.search(scope.inner_text())
    assert found is not None
    return tuple(int((g or "0").replace(",", "")) for g in found.groups())  # type: ignore[return-value]


# The verdict word of the header and the colour it is drawn in.
_VERDICT = """() => { const h = document.querySelector('.st-key-decision h3');
    let e = h; while (e && e.firstElementChild) e = e.firstElementChild;
    return [h.innerText.trim(), getComputedStyle(e).color]; }"""


def test_dashboard_cycles_and_judge_lab_give_the_same_counts(counted: Counted, small_page: Any) -> None:
    want = (counted.labeled, counted.disagreeing, counted.sealed)
    header = lambda page: page.locator(".st-key-decision")  # noqa: E731
    assert counts_on(small_page, f"{counted.url}/dashboard?run={GPT4}", header) == want
    word = small_page.evaluate(_VERDICT)
    # The Disagreements section lists the rest and names the sealed ones it leaves out.
    listed = counted.disagreeing - counted.sealed
    main = small_page.locator('[data-testid="stMain"]')
    main.get_by_text(f"{listed} disagreeing claims listed.").wait_for()
    assert (f"{counted.sealed} more are in the sealed holdout" in main.inner_text()) == bool(counted.sealed)
    # The cycle over every answer, frozen at close, in the same header on the Cycles page.
    assert counts_on(small_page, f"{counted.url}/cycles?cycle=all", header) == want
    assert small_page.evaluate(_VERDICT) == word  # one colour per verdict word
    assert counts_on(small_page, f"{counted.url}/dashboard?run={GPT4}&cycle=all", header) == want
    assert small_page.evaluate(_VERDICT) == word
    # The Judge lab opened by the Dashboard's link: the run's disagreements, the run revised chosen.
    lab = f"{counted.url}/judge_lab?run={GPT4}&focus=disagreements"
    assert counts_on(small_page, lab) == want
    revises = small_page.locator(".st-key-lab_revises input").first
    assert revises.input_value() == GPT4
    assert "never settled by a tie-break" not in (revises.get_attribute("placeholder") or "")


def test_the_dashboards_judge_lab_link_opens_the_lab_on_the_run_with_its_disagreements(
    counted: Counted, small_page: Any
) -> None:
    sign_in_at(small_page, f"{counted.url}/dashboard?run={GPT4}", "lead")
    line = small_page.locator(".st-key-decision").get_by_text(COUNTS)
    line.wait_for()
    settle(small_page)
    shown = line.inner_text().strip()
    small_page.get_by_role("link", name="Open the Judge lab on this run").click()
    small_page.get_by_text("Where the run disagrees with reviewers").wait_for()
    settle(small_page)
    assert small_page.locator(".st-key-lab_revises input").first.input_value() == GPT4
    # The lab's header is the run's assessment, its counts the Dashboard's sentence.
    lab_line = rf"^{re.escape(GPT4)}, every labeled claim of the run: .* {re.escape(shown)}$"
    small_page.get_by_text(re.compile(lab_line)).wait_for()
    # The table lists the disagreeing claims a list may show: none of the sealed holdout.
    grid = small_page.locator("[data-testid='stDataFrame']").first  # the page's first table
    grid.scroll_into_view_if_needed()  # its accessible table fills in once it is on screen
    table = grid.locator("table [role='gridcell']")
    table.first.wait_for(state="attached")
    with store.session(counted.db) as db:
        sealed = split.sealed_answer_ids(db)
    assert bool(sealed) == bool(counted.sealed)
    cells = set(table.all_inner_texts())
    assert any(c.startswith("test") for c in cells), cells  # answer ids were drawn
    assert not sealed & cells


@pytest.fixture(scope="module")
def empty_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_browser()
    tmp = tmp_path_factory.mktemp("empty")
    with store.session(tmp / "app.db"):
        pass  # migrated, nothing imported
    with start_app(tmp / "app.db", tmp / "server.log") as url:
        yield url


@pytest.mark.parametrize("page_name", ["dashboard", "cycles"])
def test_an_empty_page_links_to_the_import_page(empty_url: str, small_page: Any, page_name: str) -> None:
    sign_in_at(small_page, f"{empty_url}/{page_name}", "lead")
    main = small_page.locator('[data-testid="stMain"]')
    main.get_by_text("import judged answers first").wait_for()
    settle(small_page)  # the sign-in's own rerun (it writes the link's token) is over
    assert "None" not in main.inner_text()
    main.get_by_role("link", name="Import judged answers").click()
    # The first visit of the Import page loads its adapters: slow on a loaded machine.
    small_page.get_by_text("File of judged answers").wait_for(timeout=90_000)
    assert small_page.url.split("?")[0] == f"{empty_url}/import"
