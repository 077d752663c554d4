"""The review card's edges, each as a new user met it: a refusal that stayed and stopped the
keys, evidence keys read as verdicts, a last look without the notes and evidence, a commit of a
view another tab had changed, a card that overflowed at 1024×768 under a toast, and an
unclear-only reveal that counted "0 of 0". One server for the module; each test is its own
reviewer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from calibration import card, review, store

from .conftest import (
    Tabs,
    blur,
    build_db,
    claim_box,
    require_browser,
    server_errors,
    shot,
    sign_in,
    start_app,
    wait_claim,
    wait_for_card,
    wait_reveal,
    wait_saved,
)
from .test_review_page import App as ReviewPageApp

pytestmark = pytest.mark.browser

ANSWERS = [
    {
        "id": f"E{i}",
        "question": f"Question {i}: when and how long?",
        "answer": f"It takes {i} days. It starts after payment.",
        "chunks": [
            {"id": f"K{i}a", "text": f"Delivery: {i} days.", "source": "kb/a"},
            {"id": f"K{i}b", "text": "It starts after payment.", "source": "kb/b"},
        ],
        "claims": [
            {"id": "c1", "claim": f"It takes {i} days.", "verdict": "SUPPORTED", "rationale": f"WHY-E{i}-c1"},
            {
                "id": "c2",
                "claim": "It starts after payment.",
                "verdict": "SUPPORTED",
                "rationale": f"WHY-E{i}-c2",
            },
        ],
    }
    for i in range(1, 4)
]


class App(ReviewPageApp):
    """The review page tests' app, and whether a reviewer committed an answer."""

    def revealed(self, answer_id: str, reviewer: str) -> bool:
        with store.session(self.db) as db:
            return review.load_card(db, answer_id, reviewer).revealed


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    require_browser()
    d = tmp_path_factory.mktemp("review-card-edges")
    db = d / "app.db"
    cyc = build_db(db, ANSWERS)
    with start_app(db, d / "server.log") as url:
        yield App(url, db, cyc.id, d / "server.log")


def _tab(tabs: Tabs, app: App, reviewer: str, width: int = 1280, height: int = 720) -> Any:
    pg = tabs.open(width, height)
    sign_in(pg, app.url, reviewer)
    return pg


def _last_look(page: Any) -> None:
    wait_for_card(page, ".rc-last-look button")


def test_a_refusal_clears_on_the_next_key_and_the_keys_keep_working(app: App, tabs: Tabs) -> None:
    """Reproduced twice: after a stale-tab refusal the red message stayed on every later answer
    and on the done screen, and N did nothing until a click."""
    reviewer = "refused-once"
    first_answer = app.queue()[0]
    pks = app.pks(first_answer)
    one, two = _tab(tabs, app, reviewer), _tab(tabs, app, reviewer)
    for pg in (one, two):
        wait_claim(pg, pks[0])
    one.keyboard.press("1")
    wait_saved(one, pks[0])
    two.keyboard.press("2")  # based on the unlabeled card: refused
    message = two.locator(".rc-message")
    message.get_by_text("labeled in another tab").wait_for()
    two.keyboard.press("2")  # a new choice on what the tab now shows: recorded, message gone
    message.wait_for(state="detached")
    wait_claim(two, pks[1])
    wait_saved(two, pks[0])
    assert app.events(pks[0], reviewer) == [("blind", "SUPPORTED"), ("blind", "CONTRADICTED")]
    # Every later key acts, through the whole queue and the done screen.
    for n, answer in enumerate(app.queue()):
        claims = app.pks(answer)
        for pk in claims[1 if n == 0 else 0 :]:
            wait_claim(two, pk)
            two.keyboard.press("1")
            wait_saved(two, pk)
        _last_look(two)
        two.keyboard.press("Enter")
        wait_reveal(two)
        assert two.locator(".rc-message").count() == 0
        if n == 0:  # claim 1: CONTRADICTED, the judge SUPPORTED
            two.keyboard.press("K")
            row = two.locator(f".rc-reveal-row[data-pk='{claims[0]}']")
            row.get_by_text("You kept your verdict").wait_for()
        two.keyboard.press("N")
    two.get_by_text("Your queue in this cycle is done").wait_for()
    assert two.locator(".rc-message").count() == 0
    blur(two)
    two.keyboard.press("L")  # the answer list on the finished queue: no malformed report
    dialog = two.get_by_role("dialog")
    dialog.get_by_text(first_answer).first.wait_for()
    assert "malformed" not in two.content()


def test_evidence_keys_say_what_they_do_and_never_give_a_verdict(app: App, page: Any) -> None:
    """Reproduced: "E 2 3" recorded chunk 2 and the verdict UNSUPPORTED (E took one chunk,
    though its prompt read like a mode)."""
    reviewer = "evidence-mode"
    answer = app.queue()[0]
    pks = app.pks(answer)
    sign_in(page, app.url, reviewer)
    wait_claim(page, pks[0])
    box = page.locator(claim_box(pks[0]))
    assert "E picks them by number" in box.inner_text()
    for key in ("e", "2", "3"):
        page.keyboard.press(key)
    page.locator(".rc-message").get_by_text("This answer has no chunk 3").wait_for()
    prompt = box.locator(".rc-picking")
    assert "1–2 add or remove that chunk" in prompt.inner_text()
    assert "numbers give verdicts again" in prompt.inner_text()
    assert box.locator(".rc-chip[aria-pressed='true']").all_inner_texts() == [f"[2] K{answer[1:]}b"]
    assert app.state(pks[0], reviewer) is None  # no verdict from a chunk's number
    page.keyboard.press("1")  # still picking: chunk 1 joins, still no verdict
    box.locator(".rc-chip[aria-pressed='true']").nth(1).wait_for()
    assert app.state(pks[0], reviewer) is None
    page.keyboard.press("e")  # back to verdicts
    page.locator(f"{claim_box(pks[0])}[data-picking='no']").wait_for()
    page.keyboard.press("3")
    wait_saved(page, pks[0])
    state = app.state(pks[0], reviewer)
    assert state is not None and state.blind_verdict == "UNSUPPORTED"
    assert state.evidence == [f"K{answer[1:]}a", f"K{answer[1:]}b"]


def test_the_last_look_shows_the_notes_and_the_evidence(app: App, page: Any) -> None:
    reviewer = "last-look-details"
    answer = app.queue()[0]
    pks = app.pks(answer)
    sign_in(page, app.url, reviewer)
    wait_claim(page, pks[0])
    page.locator(f"{claim_box(pks[0])} .rc-note").fill("dates checked twice")
    blur(page)
    page.locator(f"{claim_box(pks[0])} .rc-chip").first.click()
    page.keyboard.press("1")
    wait_claim(page, pks[1])
    page.keyboard.press("1")
    _last_look(page)
    look = page.locator(f".rc-look[data-pk='{pks[0]}']")
    look.get_by_text("Note: dates checked twice").wait_for()
    assert f"Evidence: K{answer[1:]}a" in look.inner_text()
    shot(page, "last-look-details")


def test_a_commit_on_a_stale_view_is_refused_like_a_stale_label(app: App, tabs: Tabs) -> None:
    """Reproduced: a tab showing SUPPORTED committed the other tab's UNSUPPORTED without a word."""
    reviewer = "stale-commit"
    answer = app.queue()[0]
    pks = app.pks(answer)
    one, two = _tab(tabs, app, reviewer), _tab(tabs, app, reviewer)
    wait_claim(one, pks[0])
    for pk in pks:
        wait_claim(one, pk)
        one.keyboard.press("1")
        wait_saved(one, pk)
    _last_look(one)
    two.reload()  # the second tab shows the last look, every claim SUPPORTED
    _last_look(two)
    one.locator(f".rc-look[data-pk='{pks[0]}'] .rc-change").click()
    wait_claim(one, pks[0])
    one.keyboard.press("3")  # the first tab changes claim 1 to UNSUPPORTED
    _last_look(one)
    wait_saved(one, pks[0])
    two.keyboard.press("Enter")
    message = two.locator(".rc-message")
    message.get_by_text(card.STALE_VIEW).wait_for()
    two.locator(f".rc-look[data-pk='{pks[0]}']").get_by_text("UNSUPPORTED").wait_for()
    assert not app.revealed(answer, reviewer)
    shot(two, "stale-commit")
    two.keyboard.press("Enter")  # now based on what it shows: committed
    wait_reveal(two)
    assert app.revealed(answer, reviewer)


def test_nothing_overflows_at_1024_by_768_and_no_toast_covers_the_header(app: App, tabs: Tabs) -> None:
    """Reproduced: UNSUPPORTED overflowed onto the chunks, the Keys button was cut off, and
    toasts covered the header's buttons."""
    reviewer = "small-screen"
    answer = app.queue()[0]
    pks = app.pks(answer)
    page = _tab(tabs, app, reviewer, 1024, 768)
    wait_claim(page, pks[0])
    inside = page.evaluate(
        """(box) => {
        const card = document.querySelector(box).getBoundingClientRect();
        const out = [];
        for (const b of document.querySelectorAll(box + ' button')) {
          const r = b.getBoundingClientRect();
          if (r.right > card.right + 0.5 || b.scrollWidth > b.clientWidth + 1) out.push(b.innerText);
        }
        for (const b of document.querySelectorAll('.st-key-review-header button, .rc-top button')) {
          if (b.getBoundingClientRect().right > window.innerWidth) out.push(b.innerText);
        }
        return out;
        }""",
        claim_box(pks[0]),
    )
    assert inside == []
    shot(page, "1024x768")
    for pk in pks:
        wait_claim(page, pk)
        page.keyboard.press("3")
    _last_look(page)
    page.keyboard.press("Enter")
    wait_reveal(page)
    page.keyboard.press("K")
    page.locator(f".rc-reveal-row[data-pk='{pks[0]}']").get_by_text("You kept your verdict").wait_for()
    assert page.locator("[data-testid='stToast']").count() == 0


def test_an_unclear_only_reveal_says_the_judge_stays_hidden(app: App, page: Any) -> None:
    """Reproduced: "the judge agrees with you on 0 of 0 claims"."""
    reviewer = "unclear-only"
    answer = app.queue()[0]
    pks = app.pks(answer)
    sign_in(page, app.url, reviewer)
    for pk in pks:
        wait_claim(page, pk)
        page.keyboard.press("u")
    _last_look(page)
    page.keyboard.press("Enter")
    wait_reveal(page)
    summary = page.locator(".rc-summary").inner_text()
    assert "the judge's verdict stays hidden until a lead decides" in summary
    assert "0 of 0" not in summary
    assert f"WHY-{answer}" not in page.content()


def test_server_log_is_clean(app: App) -> None:
    assert server_errors(app.log) == []
