"""Untrusted text is shown exactly as stored: never markdown, HTML, LaTeX or emoji codes.

Questions, chunks (text, id, source), answers, claims, rationales, notes, the cycle name and
the reviewer's name carry payloads; a local HTTP listener stands where a markdown or HTML
image would load from, and must receive nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from calibration import backup, cycles, review, store

from .conftest import (
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
)

pytestmark = pytest.mark.browser

SCRIPT = "<script>window.__pwned = 1</script>"
DOLLARS = "$5 and $10"
BADGE = ":green-badge[SUPPORTED]"
MARKDOWN = "**bold** _it_ `code` :smile: $x^2$ # not a heading"
SECOND_CYCLE = f"zz <i>second</i> {DOLLARS} {BADGE} **b**"


@dataclass
class Listener:
    port: int
    hits: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Listener(server.server_address[1], hits)
    finally:
        server.shutdown()
        server.server_close()


def payloads(port: int) -> dict[str, str]:
    base = f"http://127.0.0.1:{port}"
    return {
        "img": f"![x]({base}/md-image.png)",
        "html_img": f'<img src="{base}/html-image.png">',
        "link": f"[click]({base}/link)",
    }


def answers(port: int) -> list[dict[str, Any]]:
    p = payloads(port)
    return [
        {
            "id": "U1",
            "question": f"Question {SCRIPT} costs {DOLLARS}? {p['img']}",
            "answer": f"It costs {DOLLARS}. {BADGE} {p['img']}\n<b>not bold</b> {MARKDOWN}",
            "chunks": [
                {
                    "id": "P1",
                    "text": f"Chunk one {p['img']} and {SCRIPT} and {DOLLARS}",
                    "source": f"source {p['html_img']}",
                },
                {"id": ":green-badge[P2]", "text": f"{BADGE} {MARKDOWN} {p['link']}"},
            ],
            "claims": [
                {
                    "id": "c1",
                    "claim": f"It costs {DOLLARS}.",
                    "verdict": "SUPPORTED",
                    "rationale": f"RATIONALE-1 {SCRIPT} {p['img']} {DOLLARS} {BADGE}",
                    "evidence": ["P1"],
                },
                {
                    "id": "c2",
                    "claim": f"{BADGE} {p['img']}",
                    "verdict": "CONTRADICTED",
                    "rationale": f"RATIONALE-2 {p['html_img']} {MARKDOWN}",
                },
            ],
        }
    ]


@dataclass
class App:
    url: str
    db: Path | str
    cycle_id: int
    log: Path
    listener: Listener
    data: dict[str, Any]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, listener: Listener
) -> Iterator[App]:
    require_browser()
    d = tmp_path_factory.mktemp("untrusted")
    db = d / "app.db"
    data = answers(listener.port)
    cyc = build_db(db, data, cycle_name=f"cycle <b>x</b> {DOLLARS} {BADGE}")
    with store.session(db) as conn:  # a second open cycle, so the page offers a choice
        cycles.create_cycle(
            conn,
            name=SECOND_CYCLE,
            judge_run="judge-x@v1",
            size=1,
            seed=1,
            reviewers=[],
            overlap=0.0,
            force=True,
            created_by="tests",
        )
    where: Path | str = db
    if request.param == "postgresql":  # the same data, served from PostgreSQL
        cluster = request.getfixturevalue("pg_cluster")
        where = cluster.new_database()
        with store.session(db) as source, store.session(where) as target:
            backup.copy_store(source, target)
    try:
        with start_app(where, d / "server.log") as url:
            yield App(url, where, cyc.id, d / "server.log", listener, data[0])
    finally:
        if isinstance(where, str):
            request.getfixturevalue("pg_cluster").drop_database(where)


def _assert_literal(page: Any, texts: list[str], port: int) -> None:
    body = page.locator("body").inner_text()
    for text in texts:
        assert text in body, f"not shown literally: {text!r}"
    assert page.evaluate("() => window.__pwned") is None, "a <script> ran"
    assert page.locator(".katex, .katex-html, math").count() == 0, "LaTeX was rendered"
    srcs = page.evaluate(
        "() => [...document.querySelectorAll('img, source, iframe')].map(e => e.src || e.srcset || '')"
    )
    assert not [s for s in srcs if f":{port}" in s], f"an image points at the listener: {srcs}"
    links = page.evaluate("() => [...document.querySelectorAll('a')].map(a => a.href)")
    assert not [h for h in links if f":{port}" in h], "a markdown link was rendered"
    # Coloured badges are only ours: the three verdicts and "Agreement" (with its icon).
    badges = page.locator("[data-testid='stBadge'], .stBadge").all_inner_texts()
    ours = ("SUPPORTED", "CONTRADICTED", "UNSUPPORTED", "Agreement", "Unclear")
    assert all(b.split()[-1] in ours for b in badges if b.strip()), badges


def test_payloads_show_literally_and_load_nothing(app: App, page: Any) -> None:
    external: list[str] = []
    # blob: of the app's own origin is the review card's inline script, which Streamlit loads
    # as a module from a Blob it makes in the page.
    page.on(
        "request",
        lambda r: (
            None if r.url.startswith((app.url, "data:", f"blob:{app.url}/")) else external.append(r.url)
        ),
    )
    name = f"<i>eve</i> {DOLLARS}"
    sign_in(page, app.url, name)
    with store.session(app.db) as db:
        pks = [c.pk for c in review.load_card(db, "U1", name).claims]
    wait_claim(page, pks[0])
    a = app.data
    before = [
        a["question"],
        a["answer"],
        a["claims"][0]["claim"],
        name,
        *(c["text"] for c in a["chunks"]),
        a["chunks"][0]["source"],
        ":green-badge[P2]",
        f"cycle <b>x</b> {DOLLARS} {BADGE}",
    ]
    _assert_literal(page, before, app.listener.port)
    assert "RATIONALE" not in page.content()

    # Cycle names in the cycle picker are plain text too.
    picker = page.locator("[data-testid='stSelectbox']")
    shown = picker.inner_text() + " " + picker.locator("input").input_value()
    assert f"cycle <b>x</b> {DOLLARS} {BADGE}" in shown, shown
    picker.locator("input").click()
    names = page.get_by_role("option").all_inner_texts()
    assert f"{SECOND_CYCLE} — 0/2 labeled" in names, names
    page.keyboard.press("Escape")
    blur(page)

    # Evidence options are chunk ids, shown as plain text.
    chips = page.locator(f"{claim_box(pks[0])} .rc-chip")
    assert chips.all_inner_texts() == ["[1] P1", "[2] :green-badge[P2]"]
    chips.nth(1).click()

    note = f"note {SCRIPT} {DOLLARS} {BADGE} {payloads(app.listener.port)['img']}"
    field = page.get_by_label("Note (optional)")
    field.fill(note)
    field.press("Enter")
    wait_claim(page, pks[0])
    blur(page)
    page.keyboard.press("1")
    wait_claim(page, pks[1])
    _assert_literal(page, [a["claims"][1]["claim"]], app.listener.port)
    shot(page, "untrusted-claim")
    page.keyboard.press("2")
    # The last look before the reveal: still blind; Enter commits and reveals.
    wait_for_card(page, ".rc-last-look button")
    page.keyboard.press("Enter")
    wait_reveal(page)
    wait_for_card(page, ".rc-reveal")
    after = [
        a["claims"][0]["rationale"],
        a["claims"][1]["rationale"],
        note,
        "Your evidence: :green-badge[P2]",
    ]
    _assert_literal(page, before[:2] + after, app.listener.port)
    shot(page, "untrusted-revealed")

    state = store.label_state(store.connect(app.db), pks[0], name)
    assert state is not None and state.note == note and state.evidence == [":green-badge[P2]"]
    page.wait_for_timeout(500)
    assert app.listener.hits == [], f"the page requested {app.listener.hits}"
    assert external == [], f"requests left the app: {external}"


def test_server_log_is_clean(app: App) -> None:
    assert server_errors(app.log) == []
