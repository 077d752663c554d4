"""Regenerate the manual's screenshots (docs/*.png) at 1280×720 (headless Chromium).

Builds a scratch database with the demo data and a WiCE cycle, starts the app on it, and
saves docs/review.png (a demo claim), docs/review_wice.png (a WiCE claim with its long web
chunks), docs/review_last_look.png and docs/review_reveal.png (a disagreement to settle).
With `dashboard`, saves only docs/dashboard.png instead: the decision header of the WiCE
gpt-3.5 run over the reviewers' labels.

    .venv/bin/python tools/screenshots.py [dashboard]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import cycles, review, store  # noqa: E402
from calibration.importing import import_answers, import_labels, load_demo  # noqa: E402
from tests.browser.conftest import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    blur,
    sign_in,
    sign_in_at,
    start_app,
    wait_claim,
    wait_for_card,
    wait_reveal,
    wait_saved,
)

DOCS = ROOT / "docs"
NO_TOAST = "() => !document.querySelector('[data-testid=\"stToast\"]')"


def settle(page: object) -> None:
    """Let the toasts of the last action fade (they last a few seconds) before a picture."""
    page.wait_for_function(NO_TOAST, timeout=15_000)  # type: ignore[attr-defined]
    page.wait_for_timeout(300)  # type: ignore[attr-defined]


KEYS = {"SUPPORTED": "1", "CONTRADICTED": "2", "UNSUPPORTED": "3"}
OTHER = {"SUPPORTED": "2", "CONTRADICTED": "1", "UNSUPPORTED": "1"}


def main() -> int:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="screens-") as tmp:
        db = Path(tmp) / "demo.db"
        with store.session(db) as conn:
            list(load_demo(conn))
            cycles.create_cycle(
                conn,
                name="wice",
                judge_run="gpt-4-0613@wice-gpt4",
                size=20,
                seed=1,
                strategy="random",
                reviewers=[],
                overlap=0.0,
                include_labeled=True,
                force=True,
                created_by="docs",
            )
            demo_id = next(c.id for c in cycles.list_cycles(conn) if c.name == "demo")
            ref = review.cycle(conn, demo_id)
            first = review.queue(conn, demo_id, "Anna")[0]
            claims = review.load_card(conn, first, "Anna").claims
            judged = dict(
                conn.execute(
                    "SELECT claim_pk, verdict FROM judge_verdicts WHERE run_id = :run_id",
                    {"run_id": ref.judge_run_id},
                ).fetchall()
            )
        with start_app(db, Path(tmp) / "server.log") as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            sign_in(page, url, "Anna")
            wait_claim(page, claims[0].pk)
            settle(page)
            page.screenshot(path=str(DOCS / "review.png"))
            for i, c in enumerate(claims):
                # The first claim is marked against the judge, so the reveal has a disagreement.
                verdict = judged.get(c.pk) or "SUPPORTED"
                page.keyboard.press(OTHER[verdict] if i == 0 else KEYS[verdict])
                wait_saved(page, c.pk)
                if i + 1 < len(claims):
                    wait_claim(page, claims[i + 1].pk)
            wait_for_card(page, ".rc-last-look button")
            settle(page)
            page.screenshot(path=str(DOCS / "review_last_look.png"))
            page.keyboard.press("Enter")
            wait_reveal(page)
            settle(page)
            page.screenshot(path=str(DOCS / "review_reveal.png"))
            page.locator("[data-testid='stSelectbox']").click()
            page.get_by_role("option").filter(has_text="wice").click()
            page.locator(".st-key-cycle-name").filter(has_text="Cycle wice").wait_for()
            blur(page)
            wait_for_card(page, ".rc-claim button")  # the WiCE cycle's first claim
            settle(page)
            page.screenshot(path=str(DOCS / "review_wice.png"))
            browser.close()
    for name in ("review", "review_last_look", "review_reveal", "review_wice"):
        print(f"wrote docs/{name}.png")
    return 0


def dashboard_shot() -> int:
    from playwright.sync_api import sync_playwright

    wice = ROOT / "data" / "wice"
    with tempfile.TemporaryDirectory(prefix="screens-") as tmp:
        db = Path(tmp) / "wice.db"
        with store.session(db) as conn:
            import_answers(conn, wice / "wice_judged_gpt4.jsonl")
            import_answers(conn, wice / "wice_judged_gpt35.jsonl")
            import_labels(conn, wice / "wice_human_labels.csv")
        with start_app(db, Path(tmp) / "server.log") as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.set_default_timeout(60_000)
            sign_in_at(page, f"{url}/dashboard?run=gpt-3.5-turbo-0613@wice-gpt35", "lead")
            page.locator(".st-key-decision").wait_for()
            settle(page)
            page.screenshot(path=str(DOCS / "dashboard.png"))
            browser.close()
    print("wrote docs/dashboard.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(dashboard_shot() if sys.argv[1:] == ["dashboard"] else main())
