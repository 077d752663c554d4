"""The blind guarantee in a real browser: a reviewer who is not a lead, with open work in a
cycle, sees none of that cycle's judge verdicts on any page or direct URL, and lead pages refuse
them on the server; the lead still gets the pages. Home shows the database path to leads only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calibration import cycles, store

from .conftest import SCREENSHOTS, Tabs, build_db, server_errors, settle, sign_in_at, start_app

pytestmark = pytest.mark.browser

LEAD = "Lena Lead"
REVIEWER = "rita"
VERDICT_WORDS = ("SUPPORTED", "CONTRADICTED", "UNSUPPORTED")
LEAD_PAGES = ("dashboard", "cycles", "judge_lab")


def _answers() -> list[dict[str, Any]]:
    verdicts = ["CONTRADICTED", "UNSUPPORTED", "SUPPORTED"]
    return [
        {
            "id": f"s{i}",
            "question": f"Question {i}?",
            "answer": f"Answer {i} is plain.",
            "chunks": [{"id": "k1", "text": f"Chunk {i}."}],
            "claims": [
                {
                    "id": "c1",
                    "claim": f"Answer {i} is plain.",
                    "verdict": verdicts[i % 3],
                    "rationale": f"rationale {i}",
                }
            ],
        }
        for i in range(6)
    ]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    tmp = tmp_path_factory.mktemp("security")
    db_path = tmp / "cal.db"
    build_db(db_path, _answers(), cycle_name="blind one", reviewers=[REVIEWER, "sam"])
    with store.session(db_path) as db:
        cycle = cycles.get_cycle(db, "blind one")
        assert cycles.queue(db, cycle.id, REVIEWER), "the reviewer must have open work"
    log = tmp / "server.log"
    with start_app(db_path, log, leads=LEAD) as url:
        yield url, db_path, log


def _text(page: Any) -> str:
    return page.locator('[data-testid="stApp"]').inner_text()


def _shot(page: Any, name: str) -> Path:
    path = SCREENSHOTS / f"security-{name}.png"
    page.screenshot(path=str(path))
    return path


def test_a_reviewer_with_open_work_sees_no_verdict_on_any_lead_page_or_url(
    app: tuple[str, Path, Path], tabs: Tabs
) -> None:
    url, _db, log = app
    page = tabs.open(1280, 720)
    try:
        for name in LEAD_PAGES:
            # A direct URL is a fresh session: sign in on it, then the server refuses the page.
            sign_in_at(page, f"{url}/{name}", REVIEWER)
            text = _text(page)
            # Refused on the server, by the page's own guard (the page is in the navigation,
            # not in this reviewer's links).
            assert "This page is for leads" in text and page.url.split("?")[0].endswith(name), name
            for word in VERDICT_WORDS:
                assert word not in text, f"{word} shown on /{name} to a reviewer"
            assert "rationale" not in text
            _shot(page, f"refused-{name}")
            # The navigation offers no lead page to this reviewer.
            nav = page.locator(".st-key-nav").inner_text()
            assert "Dashboard" not in nav and "Cycles" not in nav and "Judge lab" not in nav
        # Home (no sign-in of its own): reached from the navigation, signed in.
        sign_in_at(page, f"{url}/review", REVIEWER)
        page.locator(".st-key-nav").get_by_role("link", name="Home").click()
        page.get_by_text("Judge runs").wait_for()
        settle(page)
        text = _text(page)
        assert "Judge calibration" in text and "Database" not in text and "cal.db" not in text
        for word in VERDICT_WORDS:
            assert word not in text
        _shot(page, "home-reviewer")
    finally:
        page.close()
    assert not [e for e in server_errors(log) if "Traceback" in e]


def test_the_lead_gets_the_pages_and_the_path(app: tuple[str, Path, Path], tabs: Tabs) -> None:
    url, db_path, _log = app
    page = tabs.open(1280, 720)
    try:
        sign_in_at(page, f"{url}/dashboard", "lena  LEAD")  # any case and spacing
        text = _text(page)
        assert "This page is for leads" not in text
        _shot(page, "dashboard-lead")
        sign_in_at(page, f"{url}/cycles", LEAD)
        text = _text(page)
        assert "This page is for leads" not in text and "blind one" in text
        _shot(page, "cycles-lead")
        page.locator(".st-key-nav").get_by_role("link", name="Home").click()
        page.get_by_text("Judge runs").wait_for()
        settle(page)
        assert str(db_path) in _text(page)
        _shot(page, "home-lead")
    finally:
        page.close()


def test_a_look_alike_name_is_refused_at_sign_in(app: tuple[str, Path, Path], tabs: Tabs) -> None:
    url, db_path, _log = app
    page = tabs.open(1280, 720)
    try:
        page.goto(f"{url}/review")
        field = page.get_by_label("Your name")
        field.wait_for()
        field.fill("r\u0456ta")  # a Cyrillic і in a Latin name
        field.press("Enter")
        page.get_by_text("mixes Latin and Cyrillic").wait_for()
        _shot(page, "signin-refused")
        assert page.get_by_label("Your name").is_visible()
    finally:
        page.close()
    with store.session(db_path) as db:
        from calibration import roles

        assert "r\u0456ta" not in roles.signed_in(db)
