"""Roles and sign-in in a real browser: a lead action re-checks the lead when it runs, a reload
keeps the signed-in name and the pages of its role, and a lead's guidelines load nothing.

* Single-user mode ends while the former single user has Guidelines and Cycles open: their
  Save and Create cycle are refused in one sentence and write nothing.
* After a reload (on Home too) or a direct URL, the same person is signed in and the sidebar
  lists only the pages their role may open.
* Guidelines holding images and HTML pointing at a local server: no request reaches it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from calibration import cycles, roles, store
from calibration.importing import import_answers
from calibration.store import Database
from calibration.store import guidelines as db_guidelines

from .conftest import Tabs, request_counter, settle, sign_in_at, start_app, write_answers

pytestmark = pytest.mark.browser

LEAD = "Lena Lead"
REVIEWER = "rita"


def _answers(n: int) -> list[dict[str, Any]]:
    verdicts = ["CONTRADICTED", "UNSUPPORTED", "SUPPORTED"]
    return [
        {
            "id": f"a{i}",
            "question": f"Question {i}?",
            "answer": f"Answer {i}.",
            "chunks": [{"id": "k1", "text": f"Chunk {i}."}],
            "claims": [
                {
                    "id": "c1",
                    "claim": f"Answer {i}.",
                    "verdict": verdicts[i % 3],
                    "rationale": f"rationale {i}",
                }
            ],
        }
        for i in range(n)
    ]


@contextlib.contextmanager
def _app(tmp: Path, leads: str, fill: Callable[[Database], object]) -> Iterator[tuple[str, Path]]:
    db_path = tmp / "cal.db"
    with store.session(db_path) as db:
        import_answers(db, write_answers(tmp / "answers.jsonl", _answers(30)))
        fill(db)
    with start_app(db_path, tmp / "server.log", leads=leads) as url:
        yield url, db_path


@pytest.fixture(scope="module")
def single_user_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """An app with no lead configured and nobody signed in yet: single-user mode."""

    def old_rules(db: Database) -> object:
        return db_guidelines.save_guidelines(db, db_guidelines.PROJECT_SCOPE, "Old rules.", "tests")

    with _app(tmp_path_factory.mktemp("single"), "", old_rules) as app:
        yield app


@pytest.fixture(scope="module")
def team_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """An app with a configured lead and one cycle open to every reviewer."""

    def open_cycle(db: Database) -> object:
        return cycles.create_cycle(
            db,
            name="open one",
            judge_run="judge-x@v1",
            size=20,
            seed=7,
            strategy="random",
            reviewers=[],
            overlap=0.0,
            created_by="tests",
        )

    with _app(tmp_path_factory.mktemp("team"), LEAD, open_cycle) as app:
        yield app


@pytest.fixture
def image_server() -> Iterator[tuple[str, list[str]]]:
    with request_counter() as server:
        yield server


def _nav(page: Any) -> list[str]:
    links = page.locator(".st-key-nav a")
    links.first.wait_for()  # drawn in the same run as the name, but it may reach the page later
    return [t.strip().splitlines()[-1] for t in links.all_inner_texts()]  # after the icon's name


def _sidebar(page: Any) -> str:
    return page.locator('[data-testid="stSidebar"]').inner_text()


def _reload_at(page: Any, url: str, path: str) -> None:
    """A new session at `path` with the query string the signed-in page carries (a reload)."""
    query = urlsplit(page.url).query
    assert "signin=" in query, page.url
    page.goto(f"{url}/{path}?{query}")
    page.locator(".st-key-nav").wait_for()
    settle(page)


# ---------------------------------------------------------------- lead actions


def test_lead_actions_of_an_open_page_are_refused_once_single_user_mode_ends(
    single_user_app: tuple[str, Path], tabs: Tabs
) -> None:
    url, db_path = single_user_app
    guide, cyc, other = tabs.open(), tabs.open(), tabs.open()
    try:
        sign_in_at(guide, f"{url}/guidelines", "Solo")
        guide.get_by_label("Guidelines (markdown)").wait_for()
        sign_in_at(cyc, f"{url}/cycles", "Solo")
        cyc.get_by_role("button", name="Create cycle").wait_for()
        with store.session(db_path) as db:
            before = db_guidelines.get_guidelines(db, db_guidelines.PROJECT_SCOPE)
            assert roles.signed_in(db) == ["Solo"]

        sign_in_at(other, f"{url}/review", "Second")  # single-user mode is over
        with store.session(db_path) as db:
            assert len(roles.signed_in(db)) == 2

        guide.get_by_label("Guidelines (markdown)").fill("New rules written too late.")
        guide.get_by_role("button", name="Save").click()
        guide.get_by_text("Not done: This page is for leads").wait_for()
        settle(guide)
        assert guide.get_by_text("Saved.").count() == 0

        cyc.get_by_label("Name").fill("stale cycle")
        cyc.get_by_role("button", name="Create cycle").click()
        cyc.get_by_text("Not done: This page is for leads").wait_for()
        settle(cyc)
        assert cyc.get_by_text("Cycle created").count() == 0
    finally:
        for page in (guide, cyc, other):
            page.close()
    with store.session(db_path) as db:
        assert db_guidelines.get_guidelines(db, db_guidelines.PROJECT_SCOPE) == before
        assert cycles.list_cycles(db) == []


# ---------------------------------------------------------------- reload and direct URL


def test_a_reload_on_home_keeps_the_reviewer_and_their_pages(team_app: tuple[str, Path], tabs: Tabs) -> None:
    url, _db_path = team_app
    page = tabs.open()
    try:
        sign_in_at(page, f"{url}/review", REVIEWER)
        assert "Cycles" not in _nav(page)
        _reload_at(page, url, "")
        assert "Signed in as" in _sidebar(page) and REVIEWER in _sidebar(page)
        assert _nav(page) == ["Home", "Review"]
        _reload_at(page, url, "cycles")  # a direct URL of a lead page: not in these links,
        page.get_by_text("This page is for leads").wait_for()  # and the page refuses the reviewer
        assert _nav(page) == ["Home", "Review"] and REVIEWER in _sidebar(page)
        assert page.get_by_text("New cycle").count() == 0
    finally:
        page.close()


def test_a_reload_on_home_keeps_the_lead_and_their_pages(team_app: tuple[str, Path], tabs: Tabs) -> None:
    url, db_path = team_app
    page = tabs.open()
    try:
        sign_in_at(page, f"{url}/cycles", LEAD)
        _reload_at(page, url, "")
        assert LEAD in _sidebar(page)
        page.locator(".st-key-nav a", has_text="Cycles").wait_for()
        assert {"Cycles", "Guidelines", "Dashboard"} <= set(_nav(page))
        assert str(db_path) in page.locator('[data-testid="stMain"]').inner_text()  # leads see the path
    finally:
        page.close()


# ---------------------------------------------------------------- guidelines load nothing


def test_guidelines_with_images_and_html_make_no_request(
    team_app: tuple[str, Path], tabs: Tabs, image_server: tuple[str, list[str]]
) -> None:
    url, db_path = team_app
    where, seen = image_server
    markdown = (
        f"**Bold rule.** ![inline]({where}/inline.png)\n\n"
        f'<img src="{where}/raw.png"> ![ref][logo]\n\n'
        f"[logo]: {where}/reference.png\n"
    )
    with store.session(db_path) as db:
        db_guidelines.save_guidelines(db, db_guidelines.PROJECT_SCOPE, markdown, LEAD)
    lead, reviewer = tabs.open(), tabs.open()
    try:
        sign_in_at(lead, f"{url}/guidelines", LEAD)
        preview = lead.locator(".st-key-guidelines-preview")
        preview.locator("strong", has_text="Bold rule.").wait_for()  # formatting still renders
        shown = preview.locator('[data-testid="stMarkdownContainer"]', has=lead.locator("strong"))
        assert "![inline]" in shown.inner_text() and "<img" in shown.inner_text()  # shown as typed
        assert lead.locator(f'img[src^="{where}"]').count() == 0

        sign_in_at(reviewer, f"{url}/review", REVIEWER)
        reviewer.locator(".rc-dialog[data-dialog='guidelines']").click()
        dialog = reviewer.locator('[role="dialog"]')
        dialog.locator("strong", has_text="Bold rule.").wait_for()
        settle(reviewer)
        assert reviewer.locator(f'img[src^="{where}"]').count() == 0
    finally:
        for page in (lead, reviewer):
            page.close()
        with store.session(db_path) as db:
            db_guidelines.save_guidelines(db, db_guidelines.PROJECT_SCOPE, "", LEAD)
    assert seen == []
