"""The review page in a real browser: sign-in, keyboard labeling, blind reveal, reconcile,
reload, two reviewers at once. One server for the module; each test is its own reviewer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from calibration import review, store

from .conftest import (
    blur,
    build_db,
    require_browser,
    server_errors,
    shot,
    sign_in,
    start_app,
    wait_claim,
    wait_reveal,
)

pytestmark = pytest.mark.browser

ANSWERS = [
    {
        "id": "A1",
        "question": "When does standard delivery start, and how long does it take?",
        "answer": "Delivery takes 10 working days. It starts after payment. Pickup is on Mondays.",
        "chunks": [
            {"id": "S1", "text": "Standard delivery: 10 working days after payment.", "source": "kb/S1"},
            {"id": "S3", "text": "Pickup: Tuesday to Thursday, 10:00-16:00.", "source": "kb/S3"},
        ],
        "claims": [
            {"id": "c1", "claim": "Delivery takes 10 working days.", "verdict": "SUPPORTED",
             "rationale": "JUDGE-RATIONALE-A1-c1", "evidence": ["S1"]},
            {"id": "c2", "claim": "It starts after payment.", "verdict": "SUPPORTED",
             "rationale": "JUDGE-RATIONALE-A1-c2", "evidence": ["S1"]},
            {"id": "c3", "claim": "Pickup is on Mondays.", "verdict": "CONTRADICTED",
             "rationale": "JUDGE-RATIONALE-A1-c3", "evidence": ["S3"]},
        ],
    },
    {
        "id": "A2",
        "question": "Who approves an 8% discount?",
        "answer": "It is above 5%. The sales head approves it.",
        "chunks": [{"id": "S2", "text": "Up to 5%: the sales head; above 5%: the CFO.",
                    "source": "kb/S2"}],
        "claims": [
            {"id": "c1", "claim": "It is above 5%.", "verdict": "SUPPORTED",
             "rationale": "JUDGE-RATIONALE-A2-c1"},
            {"id": "c2", "claim": "The sales head approves it.", "verdict": "UNSUPPORTED",
             "rationale": "JUDGE-RATIONALE-A2-c2"},
        ],
    },
    {
        "id": "A3",
        "question": "Когда можно забрать заказ?",
        "answer": "Самовывоз со вторника по четверг. С 10:00 до 16:00.",
        "chunks": [{"id": "S3", "text": "Самовывоз — вторник–четверг, 10:00–16:00.", "source": "kb/S3"}],
        "claims": [
            {"id": "c1", "claim": "Самовывоз со вторника по четверг.", "verdict": "SUPPORTED",
             "rationale": "JUDGE-RATIONALE-A3-c1"},
            {"id": "c2", "claim": "С 10:00 до 16:00.", "verdict": "SUPPORTED",
             "rationale": "JUDGE-RATIONALE-A3-c2"},
        ],
    },
]
JUDGE = {(a["id"], c["id"]): c["verdict"] for a in ANSWERS for c in a["claims"]}
KEYS = {"SUPPORTED": "1", "CONTRADICTED": "2", "UNSUPPORTED": "3"}


@dataclass
class App:
    url: str
    db: Path
    cycle_id: int
    log: Path

    def queue(self) -> list[str]:
        with store.session(self.db) as db:
            return review.queue(db, self.cycle_id, "anyone")

    def pks(self, answer_id: str) -> list[int]:
        with store.session(self.db) as db:
            return [c.pk for c in review.load_card(db, answer_id, "anyone").claims]

    def state(self, pk: int, reviewer: str) -> store.LabelState | None:
        with store.session(self.db) as db:
            return store.label_state(db, pk, reviewer)

    def events(self, pk: int, reviewer: str) -> list[tuple[str, str | None]]:
        with store.session(self.db) as db:
            return [(e["kind"], e["verdict"]) for e in store.label_history(db, pk, reviewer)]

    def claim_id(self, pk: int) -> str:
        with store.session(self.db) as db:
            return db.execute("SELECT claim_id FROM claims WHERE id = ?", [pk]).fetchone()[0]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    require_browser()
    d = tmp_path_factory.mktemp("review-page")
    db = d / "app.db"
    cyc = build_db(db, ANSWERS)
    with start_app(db, d / "server.log") as url:
        yield App(url, db, cyc.id, d / "server.log")


def _markers(answer_id: str) -> list[str]:
    return [f"JUDGE-RATIONALE-{answer_id}-c{i}" for i in range(1, 4)
            if (answer_id, f"c{i}") in JUDGE]


def test_sign_in_with_a_name(app: App, page: Any) -> None:
    page.goto(f"{app.url}/review")
    field = page.get_by_label("Your name")
    field.wait_for()
    assert "name" in field.evaluate("el => el.labels[0].innerText").lower()
    field.press("Enter")
    page.get_by_text("Type your name to sign in.").wait_for()
    field.fill("  Ann   Lee ")
    field.press("Enter")
    page.locator(".st-key-cycle-name").wait_for()
    assert page.get_by_label("Your name").count() == 0, "no name field once signed in"
    sidebar = page.locator("[data-testid='stSidebar']")
    assert "Ann Lee" in sidebar.inner_text()
    first = app.queue()[0]
    wait_claim(page, app.pks(first)[0])
    # One navigation only (st.navigation over pages/, no second automatic page list).
    # A deep link to /review on a fresh server still runs app.py (ui.py leaves Streamlit's
    # legacy pages/ mode), so the entries are app.py's titles, not the file names.
    assert page.locator("[data-testid='stSidebarNav']").count() == 1
    entries = page.locator("[data-testid='stSidebarNav'] a").all_inner_texts()
    assert [e.split()[-1] for e in entries][:2] == ["Home", "Review"]
    assert not any(e.strip().endswith("app") for e in entries)
    shot(page, "signed-in")
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("Your name").wait_for()


def test_label_an_answer_by_keyboard_blind_then_reveal(app: App, page: Any) -> None:
    frames: list[bytes] = []

    def on_ws(ws: Any) -> None:
        ws.on("framereceived", lambda payload: frames.append(
            payload if isinstance(payload, bytes) else payload.encode()))

    page.on("websocket", on_ws)
    sign_in(page, app.url, "kbd")
    answer = app.queue()[0]
    pks = app.pks(answer)
    verdicts = ["SUPPORTED", "CONTRADICTED", "UNSUPPORTED"][: len(pks)]
    markers = _markers(answer)

    wait_claim(page, pks[0])
    # A first call, then back with the arrow key and a changed verdict: a new event.
    page.keyboard.press("3")
    wait_claim(page, pks[1])
    page.keyboard.press("ArrowLeft")
    wait_claim(page, pks[0])
    for i, (pk, verdict) in enumerate(zip(pks, verdicts, strict=True)):
        wait_claim(page, pk)
        if i == len(pks) - 1:
            # Before the last verdict: nothing of the judge in the DOM or on the wire.
            html = page.content()
            assert page.locator(".st-key-reveal").count() == 0
            assert not any(m in html for m in markers)
            assert not any(m.encode() in f for f in frames for m in markers)
            shot(page, "before-reveal")
        page.keyboard.press(KEYS[verdict])
    wait_reveal(page)
    html = page.content()
    assert all(m in html for m in markers), "the judge's rationales are shown after the commit"
    shot(page, "revealed")

    for pk, verdict in zip(pks, verdicts, strict=True):
        state = app.state(pk, "kbd")
        assert state is not None and state.blind_verdict == verdict and state.status == "labeled"
    assert app.events(pks[0], "kbd") == [("blind", "UNSUPPORTED"), ("blind", "SUPPORTED")]


def test_reconcile_keep_and_judge_right(app: App, page: Any) -> None:
    reviewer = "rec"
    # Every other answer labeled as the judge did, so the page resumes on A1.
    with store.session(app.db) as db:
        for answer in app.queue():
            if answer == "A1":
                continue
            for c in review.load_card(db, answer, reviewer).claims:
                review.label(db, cycle_id=app.cycle_id, reviewer=reviewer, claim_pk=c.pk,
                             verdict=JUDGE[(answer, c.claim_id)])
    pks = app.pks("A1")
    sign_in(page, app.url, reviewer)
    wait_claim(page, pks[0])
    for i, key in enumerate(("3", "3", "1")):  # the judge: SUPPORTED, SUPPORTED, CONTRADICTED
        page.keyboard.press(key)
        if i + 1 < len(pks):
            wait_claim(page, pks[i + 1])
    wait_reveal(page)
    next_button = page.get_by_role("button", name="Next answer")
    assert next_button.is_disabled(), "every disagreement must be reconciled first"

    page.keyboard.press("K")  # the first pending disagreement: I keep my verdict
    page.locator(f".st-key-reveal-{pks[0]}").get_by_text("You kept your verdict").wait_for()
    for pk in pks[1:]:
        page.locator(f".st-key-reveal-{pk}").get_by_role("button", name="The judge is right").click()
        page.locator(f".st-key-reveal-{pk}").get_by_text("The judge was right").wait_for()
    shot(page, "reconciled")

    s1, s2, s3 = (app.state(pk, reviewer) for pk in pks)
    assert (s1.blind_verdict, s1.final_verdict, s1.reconciled, s1.slip) == (
        "UNSUPPORTED", "UNSUPPORTED", "keep", False)
    assert (s2.blind_verdict, s2.final_verdict, s2.reconciled, s2.slip) == (
        "UNSUPPORTED", "SUPPORTED", "judge_right", True)
    assert (s3.blind_verdict, s3.final_verdict, s3.reconciled, s3.slip) == (
        "SUPPORTED", "CONTRADICTED", "judge_right", True)
    assert app.events(pks[1], reviewer) == [("blind", "UNSUPPORTED"), ("judge_right", "SUPPORTED")]
    with store.session(app.db) as db:
        slips = db.execute("SELECT sum(slip) FROM human_labels WHERE reviewer = ?", [reviewer])
        assert slips.fetchone()[0] == 2

    blur(page)
    page.get_by_role("button", name="Next answer").wait_for()
    page.wait_for_function("() => ![...document.querySelectorAll('button')].find("
                           "b => b.innerText.includes('Next answer')).disabled")
    page.keyboard.press("N")
    page.get_by_text("Your queue in this cycle is done").wait_for()


def test_reload_mid_answer_resumes_with_nothing_lost(app: App, page: Any) -> None:
    reviewer = "reload"
    answer = app.queue()[0]
    pks = app.pks(answer)
    sign_in(page, app.url, reviewer)
    wait_claim(page, pks[0])
    page.keyboard.press("2")
    wait_claim(page, pks[1])  # acknowledged: the next claim is drawn
    page.reload()
    sign_in(page, app.url, reviewer)  # a reload is a new browser session: sign in again
    wait_claim(page, pks[1])
    assert page.locator(".st-key-claim-list").inner_text().count("CONTRADICTED") == 1
    state = app.state(pks[0], reviewer)
    assert state is not None and state.blind_verdict == "CONTRADICTED"
    assert app.events(pks[0], reviewer) == [("blind", "CONTRADICTED")]
    progress = page.locator("[data-testid='stProgress']").inner_text()
    assert "1 of 7 claims labeled" in progress


def test_skip_and_unclear_are_recorded(app: App, page: Any) -> None:
    reviewer = "skipper"
    answer = app.queue()[0]
    pks = app.pks(answer)
    sign_in(page, app.url, reviewer)
    wait_claim(page, pks[0])
    page.keyboard.press("S")
    wait_claim(page, pks[1])
    page.keyboard.press("U")
    assert app.state(pks[0], reviewer).status == "skipped"
    page.wait_for_function("(sel) => !document.querySelector(sel)", arg=f".st-key-claim-{pks[1]}")
    assert app.state(pks[1], reviewer).status == "unclear"


def test_two_reviewers_label_the_same_claim(app: App, browser: Any) -> None:
    answer = app.queue()[0]
    pk = app.pks(answer)[0]
    pages = []
    for name in ("duo-a", "duo-b"):
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        pg = ctx.new_page()
        pg.set_default_timeout(15_000)
        sign_in(pg, app.url, name)
        wait_claim(pg, pk)
        pages.append(pg)
    try:
        pages[0].keyboard.press("1")
        pages[1].keyboard.press("2")
        nxt = app.pks(answer)[1]
        for pg in pages:
            wait_claim(pg, nxt)
        a, b = app.state(pk, "duo-a"), app.state(pk, "duo-b")
        assert a is not None and a.blind_verdict == "SUPPORTED"
        assert b is not None and b.blind_verdict == "CONTRADICTED"
        with store.session(app.db) as db:
            rows = db.execute("SELECT reviewer, verdict FROM label_events WHERE claim_pk = ? "
                              "AND reviewer LIKE 'duo-%' ORDER BY reviewer", [pk]).fetchall()
        assert rows == [("duo-a", "SUPPORTED"), ("duo-b", "CONTRADICTED")]
    finally:
        for pg in pages:
            pg.context.close()


def test_server_log_is_clean(app: App) -> None:
    assert server_errors(app.log) == []
