"""One reviewer in real headless Chromium among the websocket sessions: the figure a person sees.

The probe labels at the same pace and by the same rules as the websocket reviewers, by
keyboard (1 / 2 / 3, K / J, N), and times inside the page from the keydown to the moment
the next claim's card is drawn with its buttons (or the reveal, after an answer's last
claim), as bench_review_latency.py does. Its figure is the server's latency under the
load plus the browser's drawing, on a machine whose cores the browser shares.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

from bench.bench_review_latency import CHROMIUM, CHROMIUM_ARGS, FIRST_LISTENER, KEYS, SETTLED

# t0 is the next keydown's time stamp (`FIRST_LISTENER`, the review card stops the keys it
# takes); done in the animation frame after a claim other than `pk` is drawn with its buttons
# (the review card's claim boxes, `.rc-claim[data-pk]`), or the last look or the reveal shows one.
_ARM = """(pk) => {
    window.__t0 = null; window.__ms = null;
    let framing = false;
    const ready = () => {
        for (const sel of ['.rc-reveal', '.rc-last-look']) {
            const el = document.querySelector(sel);
            if (el && el.querySelectorAll('button').length >= 1) return true;
        }
        for (const el of document.querySelectorAll('.rc-claim[data-pk]')) {
            if (Number(el.dataset.pk) !== pk && el.querySelectorAll('button').length >= 7) return true;
        }
        return false;
    };
    const check = () => {
        if (window.__t0 !== null && !framing && ready()) {
            framing = true; obs.disconnect();
            requestAnimationFrame(() => { window.__ms = performance.now() - window.__t0; });
        }
    };
    window.__onKey = (stamp) => { window.__t0 = stamp; window.__onKey = null; check(); };
    const obs = new MutationObserver(check);
    obs.observe(document.body, {childList: true, subtree: true, attributes: true});
}"""

_CURRENT = """() => {
    for (const el of document.querySelectorAll('.rc-claim[data-pk]')) {
        if (el.querySelectorAll('button').length >= 7) return Number(el.dataset.pk);
    }
    if (document.querySelector('.rc-last-look button')) return -2;
    return document.querySelector('.rc-reveal button') ? -1 : null;
}"""


@dataclass
class Probe:
    """The probe's schedule (set by the step) and what it measured."""

    name: str
    seed: int
    verdict_pause: tuple[float, float]
    other_pause: tuple[float, float]
    agree: float
    signed_in: asyncio.Event = field(default_factory=asyncio.Event)
    go: asyncio.Event = field(default_factory=asyncio.Event)
    until: float = 0.0
    ms: list[float] = field(default_factory=list)
    acked: int = 0
    failures: list[str] = field(default_factory=list)


async def probe(url: str, cycle_name: str, judge: dict[int, str], pr: Probe) -> None:
    """Sign in (then set `pr.signed_in`), wait for `pr.go`, label until `pr.until`."""
    from playwright.async_api import async_playwright

    rng = random.Random(pr.seed)
    name = pr.name
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            await page.add_init_script(FIRST_LISTENER)
            await page.goto(f"{url}/review")
            field = page.get_by_label("Your name")
            await field.fill(name)
            await field.press("Enter")
            await page.locator(".st-key-cycle-name").wait_for()
            await page.wait_for_function(SETTLED, arg=".rc-claim button")
            picker = page.locator('[data-testid="stSelectbox"]')
            if await picker.count():
                await picker.first.click()
                await page.get_by_role("option").filter(has_text=f"{cycle_name} — ").first.click()
            await page.locator(".st-key-cycle-name").filter(has_text=f"Cycle {cycle_name} ").wait_for()
            await page.wait_for_function(SETTLED, arg=".rc-claim button")
            await page.evaluate("() => document.activeElement && document.activeElement.blur()")
            pr.signed_in.set()
            await pr.go.wait()
            until = pr.until
            disagreed: set[int] = set()
            while True:
                await page.wait_for_function(
                    SETTLED,
                    arg=".rc-claim button, .rc-reveal button, .rc-last-look button, .st-key-queue-done",
                )
                pk = await page.evaluate(_CURRENT)
                if pk is None:
                    break  # the done screen
                if pk >= 0:
                    if pk not in judge:
                        raise RuntimeError(f"claim {pk} on screen is not in the load-test cycle")
                    truth = judge[pk]
                    verdict = (
                        truth if rng.random() < pr.agree else rng.choice([v for v in KEYS if v != truth])
                    )
                    wait = rng.uniform(*pr.verdict_pause)
                    if time.perf_counter() + wait >= until:
                        break
                    await page.wait_for_timeout(wait * 1000)
                    await page.evaluate(_ARM, pk)
                    await page.keyboard.press(KEYS[verdict])
                    await page.wait_for_function("() => window.__ms !== null")
                    pr.ms.append(float(await page.evaluate("() => window.__ms")))
                    pr.acked += 1
                    if verdict != truth:
                        disagreed.add(pk)
                    continue
                if pk == -2:  # the last look: commit at once with Enter
                    await page.keyboard.press("Enter")
                    await page.wait_for_function(SETTLED, arg=".rc-reveal button")
                    continue
                # The reveal: settle this answer's disagreements with K / J, then N.
                pending = [
                    p
                    for p in sorted(disagreed)
                    if await page.locator(f".rc-reveal-row[data-pk='{p}']").count()
                ]
                keys = ["K" if rng.random() < 0.5 else "J" for _ in pending] + ["N"]
                disagreed -= set(pending)
                for key in keys:
                    wait = rng.uniform(*pr.other_pause)
                    if time.perf_counter() + wait >= until:
                        return
                    await page.wait_for_timeout(wait * 1000)
                    await page.wait_for_function(SETTLED, arg=".rc-reveal button")
                    await page.keyboard.press(key)
                    # Let the run start before the next "settled" check.
                    await page.wait_for_timeout(100)
                await page.locator(".rc-reveal").wait_for(state="detached")
        except Exception as exc:  # a probe failure is reported in the table, not a traceback
            pr.failures.append(
                f"{name} (Chromium): {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
            )
            pr.signed_in.set()  # never leave the step waiting on a probe that failed
        finally:
            await browser.close()


__all__ = ["Probe", "probe"]
