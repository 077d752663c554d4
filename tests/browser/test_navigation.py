"""The app's navigation on a server that has just started: the first visit, to any page, runs
app.py (the page config, the sign-in, the app's own links) and never shows Streamlit's
automatic page menu, whose entries are the file names in pages/ ("app", "judge lab").

Each case starts its own server: Streamlit treats the first session after a start differently
(an entry script beside a pages/ folder starts in the legacy pages/ mode), and a shared server
would hide exactly that."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calibration import roles

from .conftest import Tabs, build_db, settle, sign_in_at, start_app

pytestmark = pytest.mark.browser

LEAD = "Lena Lead"
REVIEWER = "Rita Reviewer"
TITLES = {"Home", "Review", "Cycles", "Guidelines", "Dashboard", "Import", "Judge lab"}
# What Streamlit's automatic menu would call the entry script and the files in pages/.
FILE_NAMES = {
    "app",
    "home",
    "review",
    "cycles",
    "guidelines",
    "dashboard",
    "import",
    "judge lab",
    "judge_lab",
}

# Runs in every document before the app's own scripts: records the text of every link the
# sidebar or an automatic page menu ever holds, and whether that menu ever appeared, from the
# first paint on (a menu drawn for a moment and replaced counts).
_RECORD_NAV = """(() => {
  window.__calNavLinks = new Set();
  window.__calAutoMenu = 0;
  const record = () => {
    if (document.querySelector('[data-testid="stSidebarNav"]')) window.__calAutoMenu += 1;
    for (const a of document.querySelectorAll(
        '[data-testid="stSidebarNav"] a, [data-testid="stSidebar"] a')) {
      const lines = (a.innerText || a.textContent || "").trim().split("\\n");
      window.__calNavLinks.add(lines[lines.length - 1].trim());  // after an icon's name
    }
  };
  new MutationObserver(record).observe(document, {childList: true, subtree: true, characterData: true});
})();"""


def _answers() -> list[dict[str, Any]]:
    return [
        {
            "id": f"n{i}",
            "question": f"Question {i}?",
            "answer": f"Answer {i}.",
            "chunks": [{"id": "k1", "text": "A chunk."}],
            "claims": [{"id": "c1", "claim": f"Answer {i}.", "verdict": "SUPPORTED", "rationale": "r"}],
        }
        for i in range(2)
    ]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nav") / "pristine.db"
    build_db(path, _answers(), reviewers=[LEAD])
    return path


@pytest.fixture
def fresh_server(pristine: Path, tmp_path: Path) -> Iterator[str]:
    """A server started for this test alone; yields its URL before any session has run."""
    db_path = tmp_path / "cal.db"
    shutil.copyfile(pristine, db_path)
    with start_app(db_path, tmp_path / "server.log", leads=LEAD) as url:
        yield url


# (URL path, a heading or element the page shows its lead, whether it asks for a name first).
DEEP_LINKS = [
    ("", "Judge runs", False),
    ("review", ".st-key-cycle-name", True),
    ("cycles", "New cycle", True),
    ("guidelines", "Verdict definitions reviewers see", True),
    ("dashboard", "Dashboard", True),
    ("import", "Import", True),
    ("judge_lab", "Judge lab", True),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "shown", "asks_name"), DEEP_LINKS, ids=[p or "home" for p, _, _ in DEEP_LINKS]
)
def test_the_first_visit_after_a_start_runs_the_app_at_its_deep_link_without_the_file_menu(
    fresh_server: str, tabs: Tabs, path: str, shown: str, asks_name: bool
) -> None:
    # A tab of the module's warm browser context: what is first here is the server's visit.
    page = tabs.open(1280, 720)
    page.add_init_script(_RECORD_NAV)
    page.goto(f"{fresh_server}/{path}?reviewer=Lena+Lead")
    if asks_name:
        field = page.get_by_label("Your name")
        field.wait_for()
        # The query string reached app.py's sign-in: the name is filled in from the link.
        assert field.input_value() == LEAD
        field.press("Enter")
        field.wait_for(state="detached")
    target = page.locator(shown) if shown.startswith(".") else page.get_by_role("heading", name=shown)
    target.first.wait_for()
    settle(page)
    assert "This page is for leads" not in page.locator('[data-testid="stMain"]').inner_text()
    assert page.url.split("?")[0].rstrip("/") == f"{fresh_server}/{path}".rstrip("/"), page.url
    # app.py ran: its links, under its titles, for every page a lead has.
    links = page.locator(".st-key-nav a").all_inner_texts()
    assert {t.strip().splitlines()[-1] for t in links} == TITLES
    seen = page.evaluate("() => [...window.__calNavLinks]")
    assert not FILE_NAMES & set(seen), seen
    assert page.evaluate("() => window.__calAutoMenu") == 0, "Streamlit's automatic page menu appeared"


LEAD_PATHS = ("dashboard", "cycles", "import", "judge_lab", "guidelines")


def test_a_reviewer_at_a_lead_url_reads_the_refusal_not_page_not_found(fresh_server: str, tabs: Tabs) -> None:
    page = tabs.open(1280, 720)
    for path in LEAD_PATHS:
        # A direct URL is a fresh session: the page asks for the name, then refuses this person.
        sign_in_at(page, f"{fresh_server}/{path}", REVIEWER)
        main = page.locator('[data-testid="stMain"]')
        main.get_by_text(roles.refusal(roles.Mode.LEADS_CONFIGURED), exact=True).wait_for()
        settle(page)
        assert page.url.split("?")[0].rstrip("/") == f"{fresh_server}/{path}", page.url
        text = page.locator('[data-testid="stApp"]').inner_text()
        assert "Page not found" not in text, path
        # The refusal is all the page draws: no lead content (no table, no field, no button).
        assert (
            main.locator(
                '[data-testid="stDataFrame"], [data-testid="stMetric"], input, textarea, button'
            ).count()
            == 0
        ), path
        assert "SUPPORTED" not in text and "judge-x" not in text, path
        links = {t.strip().splitlines()[-1] for t in page.locator(".st-key-nav a").all_inner_texts()}
        assert links == {"Home", "Review"}, path
