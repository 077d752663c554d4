"""The review page on one screen, in real Chromium at 1280×720 with the demo and WiCE data.

On every card of the demo cycle and of a cycle over a seeded, stratified sample of the WiCE
answers (long raw web chunks: the answers with the longest chunk, the longest answers, those
with the most claims, and a few drawn at random), the current claim's three verdict buttons and
the marked claim in the answer are inside the viewport, checked with bounding boxes; after each
reveal the first disagreement's K / J buttons are too. The reviewer disagrees with the judge on
purpose so that every answer has a disagreement to show first.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from calibration import cycles, review, store
from calibration.importing import import_answers, load_demo

from .conftest import (
    ROOT,
    Tabs,
    claim_box,
    require_browser,
    server_errors,
    start_app,
    wait_for_card,
    write_answers,
)

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1280, 720
KEYS = {"SUPPORTED": "1", "CONTRADICTED": "2", "UNSUPPORTED": "3"}
OTHER = {"SUPPORTED": "CONTRADICTED", "CONTRADICTED": "SUPPORTED", "UNSUPPORTED": "SUPPORTED"}

# Rectangles of what must be on screen, read in the page at once (one round trip per card).
_RECTS = """(pk) => {
    const r = (el) => { if (!el) return null; const b = el.getBoundingClientRect();
                        return [b.left, b.top, b.right, b.bottom]; };
    const buttons = ['SUPPORTED', 'CONTRADICTED', 'UNSUPPORTED'].map(
        (v) => r(document.querySelector(`.rc-claim[data-pk="${pk}"] .rc-verdict[data-verdict="${v}"]`)));
    const box = document.querySelector('.rc-answer');
    return {buttons, mark: r(box && box.querySelector('mark')), box: r(box)};
}"""


WICE = ROOT / "data" / "wice" / "wice_judged_gpt4.jsonl"
SAMPLE_RUN = "layout-sample"  # the prompt version the sample is imported under, a run of its own
SAMPLE_SEED = 20240605


def layout_sample(
    records: list[dict[str, Any]], per_stratum: int = 3, drawn: int = 4, seed: int = SAMPLE_SEED
) -> list[dict[str, Any]]:
    """The answers most likely to break the layout, and a few others: the `per_stratum` with the
    longest single chunk, with the longest answer, and with the most claims, then `drawn` of the
    rest at random (`seed`); no answer twice, in file order."""
    picked: list[str] = []
    for size in (
        lambda r: max((len(c["text"]) for c in r["chunks"]), default=0),
        lambda r: len(r["answer"]),
        lambda r: len(r["claims"]),
    ):
        picked += [r["id"] for r in sorted(records, key=size, reverse=True) if r["id"] not in picked][
            :per_stratum
        ]
    rest = sorted(r["id"] for r in records if r["id"] not in picked)
    picked += random.Random(seed).sample(rest, drawn)
    return [r for r in records if r["id"] in picked]


@dataclass
class Demo:
    url: str
    db: Path
    log: Path
    cycles: dict[str, int]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    require_browser()
    d = tmp_path_factory.mktemp("review-layout")
    db = d / "demo.db"
    with store.session(db) as conn:
        list(load_demo(conn))
        records = [json.loads(line) for line in WICE.read_text(encoding="utf-8").splitlines()]
        chosen = layout_sample(records)
        import_answers(
            conn,
            write_answers(d / "sample.jsonl", [{**r, "judge_prompt_version": SAMPLE_RUN} for r in chosen]),
        )
        sample = cycles.create_cycle(
            conn,
            name="sample",
            judge_run=f"gpt-4-0613@{SAMPLE_RUN}",
            size=len(chosen),
            seed=1,
            strategy="random",
            reviewers=[],
            overlap=0.0,
            include_labeled=True,
            force=True,
            created_by="tests",
        )
        ids = {c.name: c.id for c in cycles.list_cycles(conn)}
    assert sample.size == len(chosen) and "demo" in ids
    with start_app(db, d / "server.log") as url:
        yield Demo(url, db, d / "server.log", ids)


@pytest.fixture
def small_page(tabs: Tabs) -> Any:
    return tabs.open(WIDTH, HEIGHT)


def _inside(rect: list[float] | None, what: str) -> None:
    assert rect is not None, f"{what} is not drawn"
    left, top, right, bottom = rect
    assert left >= 0 and right <= WIDTH and top >= 0 and bottom <= HEIGHT, (
        f"{what} is outside the {WIDTH}×{HEIGHT} viewport: {rect}"
    )


def _judge(db: Path, cycle_id: int) -> list[tuple[str, list[tuple[int, str | None]]]]:
    """The cycle's answers in queue order, each with (claim pk, judge verdict) per claim."""
    with store.session(db) as conn:
        ref = review.cycle(conn, cycle_id)
        out = []
        for answer in review.queue(conn, cycle_id, "layout"):
            claims = review.load_card(conn, answer, "layout").claims
            judged = dict(
                conn.execute(
                    "SELECT claim_pk, verdict FROM judge_verdicts WHERE run_id = :run_id",
                    {"run_id": ref.judge_run_id},
                ).fetchall()
            )
            out.append((answer, [(c.pk, judged.get(c.pk)) for c in claims]))
    return out


def test_the_sample_holds_each_stratum_and_is_the_same_every_run() -> None:
    records = [json.loads(line) for line in WICE.read_text(encoding="utf-8").splitlines()]
    ids = [r["id"] for r in layout_sample(records)]
    assert ids == [r["id"] for r in layout_sample(records)] and len(set(ids)) == len(ids) == 13
    assert max(records, key=lambda r: max(len(c["text"]) for c in r["chunks"]))["id"] in ids
    assert max(records, key=lambda r: len(r["answer"]))["id"] in ids
    assert max(records, key=lambda r: len(r["claims"]))["id"] in ids


@pytest.mark.parametrize("cycle_name, reviewer", [("demo", "layout-demo"), ("sample", "layout-sample")])
def test_every_card_fits_the_screen(demo: Demo, small_page: Any, cycle_name: str, reviewer: str) -> None:
    page = small_page
    plan = _judge(demo.db, demo.cycles[cycle_name])
    page.goto(f"{demo.url}/review")
    page.get_by_label("Your name").fill(reviewer)
    page.get_by_label("Your name").press("Enter")
    # The line itself, not only its container: under load the container is drawn a moment before
    # its text, and an empty line named no cycle.
    line = page.locator(".st-key-cycle-name .cal-cycle")
    line.wait_for()
    if not line.inner_text().startswith(f"Cycle {cycle_name} ·"):
        page.locator("[data-testid='stSelectbox'] input").click()
        # The shown cycle's option has no count (the card's progress line has it).
        page.get_by_role("option").filter(has_text=re.compile(rf"^{cycle_name}( —|$)")).first.click()
        page.wait_for_function(
            "(n) => document.querySelector('.st-key-cycle-name').innerText.includes('Cycle ' + n)",
            arg=cycle_name,
        )
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    cards = reveals = 0
    for n, (answer, claims) in enumerate(plan):
        for i, (pk, judge) in enumerate(claims):
            wait_for_card(page, f"{claim_box(pk)} button")
            # The card scrolls the answer box to its mark when it draws the claim: the next
            # frame shows it there.
            page.evaluate("() => new Promise((done) => requestAnimationFrame(() => done(null)))")
            rects = page.evaluate(_RECTS, pk)
            for verdict, rect in zip(KEYS, rects["buttons"], strict=True):
                _inside(rect, f"{answer} claim {i + 1}: the {verdict} button")
            _inside(rects["mark"], f"{answer} claim {i + 1}: the marked claim")
            mark, box = rects["mark"], rects["box"]
            assert box[1] - 1 <= mark[1] and mark[1] < box[3], f"{answer}: the mark is scrolled away"
            if n == 0 and i == 0:
                page.screenshot(path=f"/tmp/review-layout-{cycle_name}.png")
            cards += 1
            # Disagree with the judge on the first claim, agree on the rest.
            verdict = OTHER.get(judge or "", "SUPPORTED") if i == 0 else (judge or "SUPPORTED")
            page.keyboard.press(KEYS[verdict])
        wait_for_card(page, ".rc-last-look button")
        page.keyboard.press("Enter")
        wait_for_card(page, ".rc-reveal button")
        first = claims[0][0]
        if claims[0][1] is not None:
            rects = page.evaluate(
                """(pk) => ['keep', 'judge-right'].map((k) => {
                const row = `.rc-reveal-row[data-pk='${pk}']`;
                const b = document.querySelector(`${row} .rc-${k}`).getBoundingClientRect();
                return [b.left, b.top, b.right, b.bottom]; })""",
                first,
            )
            _inside(rects[0], f"{answer}: I keep my verdict")
            _inside(rects[1], f"{answer}: the judge is right")
            reveals += 1
            page.keyboard.press("K")
            page.locator(f".rc-reveal-row[data-pk='{first}']").get_by_text("You kept your verdict").wait_for()
            wait_for_card(page, ".rc-reveal button")
        page.keyboard.press("N")
    page.locator(".st-key-queue-done").wait_for()
    assert cards == sum(len(c) for _, c in plan) and reveals == sum(c[0][1] is not None for _, c in plan)
    assert cards >= (9 if cycle_name == "demo" else 13)


def test_the_page_fits_at_1440_by_900_too(demo: Demo, tabs: Tabs) -> None:
    page = tabs.open(1440, 900)
    page.goto(f"{demo.url}/review")
    page.get_by_label("Your name").fill("layout-wide")
    page.get_by_label("Your name").press("Enter")
    plan = _judge(demo.db, demo.cycles["demo"])
    pk = plan[0][1][0][0]
    wait_for_card(page, f"{claim_box(pk)} button")
    rects = page.evaluate(_RECTS, pk)
    for rect in [*rects["buttons"], rects["mark"]]:
        assert rect is not None and rect[3] <= 900 and rect[2] <= 1440, rects


def test_server_log_is_clean(demo: Demo) -> None:
    assert server_errors(demo.log) == []
