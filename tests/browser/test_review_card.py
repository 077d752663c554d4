"""The review card (components/review_card.js) in a real browser: keys pressed faster than the
server answers all land, in order; a write that fails keeps the verdicts on the card with the
message; keys pressed the moment a view is redrawn are never lost. One server for the module;
each test is its own reviewer (the read-only test has a server of its own)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from calibration import review, store

from .conftest import (
    build_db,
    require_browser,
    server_errors,
    settled,
    sign_in,
    start_app,
    wait_claim,
    wait_for_card,
    wait_reveal,
    wait_saved,
    wait_until,
)

pytestmark = pytest.mark.browser

VERDICTS = ("SUPPORTED", "CONTRADICTED", "UNSUPPORTED")
KEYS = {"SUPPORTED": "1", "CONTRADICTED": "2", "UNSUPPORTED": "3"}
LONG = {
    "id": "L30",
    "question": "Thirty facts?",
    "answer": " ".join(f"Fact {i} holds." for i in range(1, 31)),
    "chunks": [{"id": "k1", "text": "Every fact holds."}],
    "claims": [
        {
            "id": f"c{i}",
            "claim": f"Fact {i} holds.",
            "verdict": "SUPPORTED",
            "rationale": f"JUDGE-RATIONALE-L30-c{i}",
        }
        for i in range(1, 31)
    ],
}
SHORT = [
    {
        "id": f"S{i:02d}",
        "question": f"Question {i}?",
        "answer": f"Answer {i}.",
        "chunks": [{"id": "k1", "text": f"Chunk {i}."}],
        "claims": [
            {
                "id": "c1",
                "claim": f"Answer {i}.",
                "verdict": "SUPPORTED",
                "rationale": f"JUDGE-RATIONALE-S{i:02d}",
            }
        ],
    }
    for i in range(12)
]


@dataclass
class App:
    url: str
    db: Path
    cycle_id: int
    log: Path

    def pks(self, answer_id: str) -> list[int]:
        with store.session(self.db) as db:
            return [c.pk for c in review.load_card(db, answer_id, "anyone").claims]

    def queue(self, reviewer: str) -> list[str]:
        with store.session(self.db) as db:
            return review.queue(db, self.cycle_id, reviewer)

    def events(self, reviewer: str) -> list[tuple[int, str, str | None]]:
        with store.session(self.db) as db:
            return [
                tuple(r)
                for r in db.execute(  # type: ignore[misc]
                    "SELECT claim_pk, kind, verdict FROM label_events WHERE reviewer = :reviewer ORDER BY id",
                    {"reviewer": reviewer},
                )
            ]

    def settle_all_but(self, reviewer: str, keep: set[str]) -> None:
        """Label every answer but `keep` as the judge did, and commit them."""
        with store.session(self.db) as db:
            for answer in review.queue(db, self.cycle_id, reviewer):
                if answer in keep:
                    continue
                for c in review.load_card(db, answer, reviewer).claims:
                    review.label(
                        db, cycle_id=self.cycle_id, reviewer=reviewer, claim_pk=c.pk, verdict="SUPPORTED"
                    )
                review.commit(db, cycle_id=self.cycle_id, reviewer=reviewer, answer_id=answer)


def _app(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[App]:
    require_browser()
    d = tmp_path_factory.mktemp(name)
    (d / "db").mkdir()
    db = d / "db" / "app.db"
    cyc = build_db(db, [LONG, *SHORT])
    with start_app(db, d / "server.log") as url:
        yield App(url, db, cyc.id, d / "server.log")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    yield from _app(tmp_path_factory, "review-card")


def _frames(page: Any) -> list[bytes]:
    """The websocket frames the page receives from now on, as they arrive."""
    frames: list[bytes] = []
    page.on(
        "websocket",
        lambda ws: ws.on("framereceived", lambda p: frames.append(p if isinstance(p, bytes) else p.encode())),
    )
    return frames


def test_thirty_keys_at_once_land_as_thirty_labels_in_order(app: App, page: Any) -> None:
    """Thirty verdict keys pressed back to back (within a second, far faster than a run of the
    server): every claim is drawn at once and gets its label, in the order pressed."""
    reviewer = "thirty"
    app.settle_all_but(reviewer, {"L30"})
    pks = app.pks("L30")
    sign_in(page, app.url, reviewer)
    wait_claim(page, pks[0])
    pressed = [VERDICTS[i % 3] for i in range(30)]
    for verdict in pressed:
        page.keyboard.press(KEYS[verdict])
    page.locator(".rc-last-look").wait_for()
    for pk in pks:
        wait_saved(page, pk)
    assert app.events(reviewer)[-30:] == [(pk, "blind", v) for pk, v in zip(pks, pressed, strict=True)]
    page.keyboard.press("Enter")
    wait_reveal(page)


def test_the_judge_stays_off_the_card_and_the_wire_before_the_commit(app: App, page: Any) -> None:
    """The card is sent the answer and the reviewer's own labels only: no judge verdict or
    rationale in the DOM or on the websocket until the commit is written."""
    frames = _frames(page)
    reviewer = "wire"
    app.settle_all_but(reviewer, {"S00"})
    pk = app.pks("S00")[0]
    sign_in(page, app.url, reviewer)
    wait_claim(page, pk)
    page.keyboard.press("2")
    page.locator(".rc-last-look").wait_for()
    wait_saved(page, pk)
    marker = "JUDGE-RATIONALE-S00"
    assert marker not in page.content() and not any(marker.encode() in f for f in frames)
    page.keyboard.press("Enter")
    wait_reveal(page)
    page.get_by_text(marker).wait_for()


def test_a_verdict_goes_to_the_route_with_no_run_of_the_page(app: App, page: Any) -> None:
    """A verdict is one POST to the card's verdict route (card_route.py) and no script run: the
    claim shows "saved" and its label is in the database with nothing sent on the websocket;
    the commit then goes through the page, which knows what the route wrote (no second write)."""
    frames = _frames(page)
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    reviewer = "card alone"
    app.settle_all_but(reviewer, {"S01"})
    pk = app.pks("S01")[0]
    sign_in(page, app.url, reviewer)
    wait_claim(page, pk)
    settled(page)  # the sign-in's run has ended: its last frame is in
    assert any(b"Chunk 1." in f for f in frames)  # the chunk, drawn with the page
    since = len(frames)
    page.keyboard.press("3")
    page.locator(".rc-last-look").wait_for()
    wait_saved(page, pk)
    assert [u.rsplit("/", 2)[-2:] for u in posts] == [["_calibration", "card"]]
    assert app.events(reviewer)[-1] == (pk, "blind", "UNSUPPORTED")
    assert frames[since:] == []  # no run of the page: nothing came back on the websocket
    page.keyboard.press("Enter")
    wait_reveal(page)
    assert [e for e in app.events(reviewer) if e[0] == pk] == [(pk, "blind", "UNSUPPORTED")]


def test_no_k_j_or_n_lost_in_500_presses_right_after_redraws(app: App, page: Any) -> None:
    """Per answer: a verdict that disagrees, Enter, then K (or J) and N pressed at once, before
    the reveal is drawn; on the last answer K and J in turn, back to back, each a change of mind
    and each redrawing the reveal, up to 500 presses of N, K and J. Every key acts: every choice
    is recorded, in order, and every N reaches the next answer."""
    reviewer = "keys500"
    answers = {a["id"] for a in SHORT}
    app.settle_all_but(reviewer, answers)
    order = [a for a in app.queue(reviewer) if a in answers]
    sign_in(page, app.url, reviewer)
    presses = 0
    expected: list[tuple[int, str]] = []
    for n, answer in enumerate(order):
        pk = app.pks(answer)[0]
        wait_claim(page, pk)  # drawn once the N before reached the server
        page.keyboard.press("2")  # the judge said SUPPORTED: a disagreement
        page.keyboard.press("Enter")
        key = "J" if n % 2 == 0 else "K"
        page.keyboard.press(key)
        expected.append((pk, CHOICE[key]))
        presses += 1
        if n + 1 < len(order):
            page.keyboard.press("N")
            presses += 1
            continue
        while presses < 500:
            key = "K" if key == "J" else "J"
            page.keyboard.press(key)
            expected.append((pk, CHOICE[key]))
            presses += 1
    wait_reveal(page)
    _await_reconciles(app, reviewer, len(expected))
    got = [(pk, kind) for pk, kind, _ in app.events(reviewer) if kind in CHOICE.values()]
    assert got == expected, (len(got), len(expected))


CHOICE = {"K": "keep", "J": "judge_right"}


def _await_reconciles(app: App, reviewer: str, n: int, timeout_s: float = 180) -> None:
    """Until `reviewer` has `n` reconcile events: the server works through the queued keys."""
    wait_until(
        lambda: sum(kind in CHOICE.values() for _, kind, _ in app.events(reviewer)) >= n, timeout_s, 0.2
    )


def _immutable(path: Path, on: bool) -> None:
    done = subprocess.run(
        ["chattr", "+i" if on else "-i", str(path)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"chattr failed here: {done.stderr.strip()}")


@pytest.fixture
def quiet_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    """A server of its own, with no file of the database opened by earlier tests: SQLite keeps
    the descriptors of closed connections and may write through one after the file was made
    read-only."""
    yield from _app(tmp_path_factory, "review-card-read-only")


def test_a_failed_write_keeps_the_verdict_on_the_card(quiet_app: App, page: Any) -> None:
    """The database made read-only under the page: the verdict stays on the card marked "not
    saved" with the message; once the database is writable again "Try again" saves it."""
    app = quiet_app
    reviewer = "readonly"
    app.settle_all_but(reviewer, {"S01"})
    pk = app.pks("S01")[0]
    sign_in(page, app.url, reviewer)
    wait_claim(page, pk)
    if os.geteuid() == 0:
        _immutable(app.db, True)
    else:
        app.db.chmod(0o444)
    try:
        page.keyboard.press("3")
        message = page.locator(".rc-message")
        message.wait_for()
        assert "Not saved: The database could not do its part" in message.inner_text()
        assert "read-only" in message.inner_text()
        look = page.locator(f".rc-look[data-pk='{pk}']")
        assert "UNSUPPORTED" in look.inner_text() and "not saved" in look.inner_text()
        assert not any(p == pk for p, _, _ in app.events(reviewer))
    finally:
        if os.geteuid() == 0:
            _immutable(app.db, False)
        else:
            app.db.chmod(0o644)
    page.locator(".rc-retry").click()
    wait_saved(page, pk)
    page.locator(".rc-message").wait_for(state="detached")
    assert [(p, v) for p, _, v in app.events(reviewer) if p == pk] == [(pk, "UNSUPPORTED")]
    wait_for_card(page, ".rc-last-look button")


def test_server_log_is_clean(app: App) -> None:
    assert server_errors(app.log) == []
