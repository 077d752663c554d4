"""A lead's roster change reaches an open review page at its next write: a reviewer deactivated,
or renamed, while their page is open writes no further label, through the card's verdict route
or the page, and the page ends the session with the one sentence saying why; the reload link
of a renamed-away name signs nobody in. One server for the module; each test its own reviewer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from calibration import review, roster, store

from .conftest import build_db, page_wait_until, require_browser, settle, sign_in, start_app, wait_claim

pytestmark = pytest.mark.browser

ANSWER = {
    "id": "R1",
    "question": "How long, and how much?",
    "answer": "Ten days. Five percent. Twice a week.",
    "chunks": [{"id": "k1", "text": "Ten days, five percent."}],
    "claims": [
        {"id": f"c{i}", "claim": text, "verdict": "SUPPORTED", "rationale": f"JUDGE-R1-c{i}"}
        for i, text in enumerate(["Ten days.", "Five percent.", "Twice a week."], start=1)
    ],
}


@dataclass
class App:
    url: str
    db: Path

    def pks(self) -> list[int]:
        with store.session(self.db) as db:
            return [c.pk for c in review.load_card(db, "R1", "anyone").claims]

    def events(self, reviewer: str) -> list[tuple[int, str | None]]:
        with store.session(self.db) as db:
            rows = db.execute(
                "SELECT claim_pk, verdict FROM label_events WHERE reviewer = :reviewer ORDER BY id",
                {"reviewer": reviewer},
            ).fetchall()
        return [(r[0], r[1]) for r in rows]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    require_browser()
    d = tmp_path_factory.mktemp("review-roster")
    db = d / "app.db"
    build_db(db, [ANSWER])
    with start_app(db, d / "server.log") as url:
        yield App(url, db)


def _signed_in_with_one_verdict(app: App, page: Any, reviewer: str) -> list[int]:
    """`reviewer` on the roster, signed in, their first claim's verdict written; the claims."""
    with store.session(app.db) as db:
        roster.add(db, reviewer, by="lead")
    pks = app.pks()
    sign_in(page, app.url, reviewer)
    wait_claim(page, pks[0])
    page.keyboard.press("1")
    wait_claim(page, pks[1])
    assert page_wait_until(page, lambda: app.events(reviewer) == [(pks[0], "SUPPORTED")])
    return pks


def _ended_with(page: Any, sentence: str) -> None:
    """The page shows the sign-in again, with `sentence`."""
    page.get_by_text(sentence).wait_for()
    page.get_by_role("button", name="Sign in").wait_for()
    settle(page)
    assert page.locator(".rc-claim").count() == 0


def test_a_reviewer_deactivated_while_their_page_is_open_writes_nothing_more(app: App, page: Any) -> None:
    pks = _signed_in_with_one_verdict(app, page, "dora")
    with store.session(app.db) as db:
        roster.deactivate(db, "dora", by="lead")
    page.keyboard.press("2")  # the next verdict: the route refuses, then the page does
    _ended_with(page, "A lead deactivated you: 'dora' is deactivated on the reviewer roster")
    assert app.events("dora") == [(pks[0], "SUPPORTED")]


def test_a_renamed_reviewer_writes_nothing_under_the_old_name_nor_signs_in_by_its_link(
    app: App, page: Any
) -> None:
    pks = _signed_in_with_one_verdict(app, page, "rita")
    link = page.url  # the reload link: ?reviewer=rita&signin=TOKEN
    assert "signin=" in link
    with store.session(app.db) as db:
        roster.rename(db, "rita", "Rita Lee", by="lead")
    page.keyboard.press("3")
    sentence = "A lead renamed you to 'Rita Lee': sign in again as 'Rita Lee'"
    _ended_with(page, sentence)
    assert app.events("rita") == [] and app.events("Rita Lee") == [(pks[0], "SUPPORTED")]
    page.goto(link)  # the link signed before the rename
    _ended_with(page, sentence)
    assert app.events("rita") == []


def test_a_commit_after_the_deactivation_records_nothing_and_ends_the_session(app: App, page: Any) -> None:
    """The commit (Enter at the last look) goes through the page's own callback, not the route."""
    pks = _signed_in_with_one_verdict(app, page, "cleo")
    for key, pk in zip("12", pks[1:], strict=True):
        page.keyboard.press(key)
        assert page_wait_until(page, lambda pk=pk: pk in dict(app.events("cleo")))
    page.locator(".rc-last-look").wait_for()
    with store.session(app.db) as db:
        roster.deactivate(db, "cleo", by="lead")
    page.keyboard.press("Enter")
    _ended_with(page, "A lead deactivated you: 'cleo' is deactivated on the reviewer roster")
    with store.session(app.db) as db:
        assert db.execute("SELECT count(*) FROM answer_reveals WHERE reviewer = 'cleo'").fetchone()[0] == 0
