"""Review-page latency in a real browser: keypress -> next thing on screen.

Runs the real app (`streamlit run app.py`) against two synthetic databases, a small one
(100 judged answers) and a large one (100,000 judged answers, 300,000 claims, with
150,000 human labels of other reviewers), and in headless Chromium labels claims of an
open cycle by keyboard. For every key it measures, inside the page, the time from the
keydown event to the animation frame that paints the next view with its buttons: after a
verdict the next claim (after the last claim of an answer: the last look), drawn by the card
in the browser, and after Enter on the last look (the commit step) the reveal of the judge,
drawn by the server; and for every verdict the time until the card marks it "saved" (the
server wrote it and acknowledged it). The first few keys warm the server up and are not
counted. Prints median and p95 of verdict -> next claim drawn and verdict -> acknowledged,
and per kind of view.

    .venv/bin/python bench/bench_review_latency.py [--verdicts 200] [--big 100000] [--huge-chunk 1048576]

A third case gives every answer of the cycle a first chunk of a megabyte (`--huge-chunk`), to
compare with the small database's figures of the same run: a key must not pay for the chunk.

The per-verdict server work reads by key and index only (one answer, one cycle queue),
so the two figures should be close; a gap that grows with the database is a bug.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load.data import WORDS  # noqa: E402
from calibration import cycles, review, store  # noqa: E402

# The browser suite's own server start-up, so the benchmark measures the app as tested.
from tests.browser.conftest import start_app  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
KEYS = {"SUPPORTED": "1", "CONTRADICTED": "2", "UNSUPPORTED": "3"}
CLAIMS_PER_ANSWER = 3
WARMUP = 5
REVIEWER = "bench"


# ---------------------------------------------------------------- synthetic data


def build_db(path: Path, n_answers: int, seed: int = 1, chunk_chars: int = 0) -> None:
    """n judged answers of 3 claims and 2 chunks, one judge run; labels of other reviewers
    on half of the claims (two each) so the label tables are large too. `chunk_chars`: the
    first chunk of every answer is that long (0: a sentence, as the others)."""
    rng = random.Random(seed)
    ts = store.now()

    def sentence(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + "."

    with store.session(path) as db:
        with store.write(db):
            run = store.run_id(db, "bench-judge", "v1", created_at=ts)
            batch = 20_000
            for start in range(0, n_answers, batch):
                answers, chunks, claims, verdicts, labels, events = [], [], [], [], [], []
                for i in range(start, min(n_answers, start + batch)):
                    aid = f"a{i:07d}"
                    texts = [sentence(8) for _ in range(CLAIMS_PER_ANSWER)]
                    answer = " ".join(texts)
                    question = sentence(10)[:-1] + "?"
                    h = hashlib.sha256(f"{aid}{question}{answer}".encode()).hexdigest()
                    answers.append((aid, question, answer, None, "{}", h, 0, ts))
                    for p in range(2):
                        text = sentence(25)
                        if p == 0 and chunk_chars:
                            text = (text + " ") * (chunk_chars // (len(text) + 1) + 1)
                            text = text[:chunk_chars]
                        chunks.append((aid, p, f"S{p + 1}", text, f"kb/{aid}/S{p + 1}"))
                    for p, text in enumerate(texts):
                        pk = i * CLAIMS_PER_ANSWER + p + 1
                        claims.append((pk, aid, f"c{p + 1}", p, text))
                        v = rng.choices(list(KEYS), weights=(6, 1, 3))[0]
                        verdicts.append((run, pk, v, v.lower(), f"Rationale {sentence(12)}", "[]"))
                        if rng.random() < 0.5:
                            for who in ("rev-a", "rev-b"):
                                hv = rng.choice(list(KEYS))
                                labels.append((pk, who, "labeled", hv, hv, "[]", ts, ts, ts))
                                events.append((pk, who, "import", hv, "[]", ts))
                db.conn.executemany(
                    "INSERT INTO answers (id, question, answer, category, metadata, "
                    "content_hash, holdout, imported_at) VALUES (?,?,?,?,?,?,?,?)",
                    answers,
                )
                db.conn.executemany(
                    "INSERT INTO chunks (answer_id, position, chunk_id, text, source) VALUES (?,?,?,?,?)",
                    chunks,
                )
                db.conn.executemany(
                    "INSERT INTO claims (id, answer_id, claim_id, position, text) VALUES (?,?,?,?,?)", claims
                )
                db.conn.executemany(
                    "INSERT INTO judge_verdicts (run_id, claim_pk, verdict, raw_verdict, "
                    "rationale, evidence) VALUES (?,?,?,?,?,?)",
                    verdicts,
                )
                db.conn.executemany(
                    "INSERT INTO human_labels (claim_pk, reviewer, status, blind_verdict, "
                    "final_verdict, evidence, blind_at, final_at, updated_at) "
                    "VALUES (?,?,?,?,?,?,?,?,?)",
                    labels,
                )
                db.conn.executemany(
                    "INSERT INTO label_events (claim_pk, reviewer, kind, verdict, "
                    "evidence, created_at) VALUES (?,?,?,?,?,?)",
                    events,
                )
        db.execute("ANALYZE")


def open_cycle(path: Path, size: int) -> tuple[int, list[str]]:
    with store.session(path) as db:
        c = cycles.create_cycle(
            db,
            name="bench",
            judge_run="bench-judge@v1",
            size=size,
            seed=5,
            strategy="random",
            reviewers=[],
            overlap=0.0,
            include_labeled=True,
            force=True,
            created_by="bench",
        )
        return c.id, review.queue(db, c.id, REVIEWER)


def judge_verdicts(path: Path, answers: list[str]) -> dict[str, list[tuple[int, str]]]:
    """Per answer, (claim pk, judge verdict) in order: the bench agrees with the judge, so no
    answer waits on a reconcile."""
    out: dict[str, list[tuple[int, str]]] = {}
    with store.session(path) as db:
        for aid in answers:
            out[aid] = [
                tuple(r)
                for r in db.execute(
                    "SELECT c.id, v.verdict FROM claims c JOIN judge_verdicts v ON v.claim_pk = c.id "
                    "WHERE c.answer_id = :answer_id ORDER BY c.position",
                    {"answer_id": aid},
                )
            ]
    return out


# ---------------------------------------------------------------- server and browser


SETTLED = """(sel) => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector('[data-stale="true"]') && !!document.querySelector(sel);
}"""

# Arms the timers of one key: t0 is the keydown's own time stamp (`FIRST_LISTENER`);
# `__ms` when the animation frame after `sel` holds `buttons` buttons has begun (the frame
# that paints it); `__ack` when `ack` (a claim's mark) reads "saved": the server wrote the
# verdict and said so.
ARM = """([sel, buttons, ack]) => {
    window.__t0 = null; window.__ms = null; window.__ack = ack ? null : -1;
    window.__onKey = (stamp) => { window.__t0 = stamp; window.__onKey = null; check(); };
    const ready = () => { const el = document.querySelector(sel);
                          return el && el.querySelectorAll('button').length >= buttons; };
    const saved = () => { const el = ack && document.querySelector(ack);
                          return !!el && el.textContent === 'saved'; };
    let framing = false;
    const check = () => {
        if (window.__t0 === null) return;
        if (window.__ms === null && !framing && ready()) {
            framing = true;
            requestAnimationFrame(() => { window.__ms = performance.now() - window.__t0; });
        }
        if (window.__ack === null && saved()) window.__ack = performance.now() - window.__t0;
        if (window.__ms !== null && window.__ack !== null) obs.disconnect();
    };
    const obs = new MutationObserver(check);
    obs.observe(document.body, {childList: true, subtree: true, attributes: true, characterData: true});
}"""
# Before any script of the page: the first keydown listener, so it sees every key, also those
# the card takes (it stops them there).
FIRST_LISTENER = """window.addEventListener('keydown',
    (e) => { if (window.__onKey) window.__onKey(e.timeStamp); }, true);"""


def measure(
    url: str, plan: dict[str, list[tuple[int, str]]], order: list[str], n: int
) -> list[tuple[float, float | None, str]]:
    """(milliseconds to the view drawn, milliseconds to the verdict acknowledged or None, what
    was drawn: 'claim', 'last look' or 'reveal') per counted key."""
    from playwright.sync_api import sync_playwright

    times: list[tuple[float, float | None, str]] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        page.add_init_script(FIRST_LISTENER)
        page.goto(f"{url}/review")
        page.get_by_label("Your name").fill(REVIEWER)
        page.get_by_label("Your name").press("Enter")
        page.wait_for_function(SETTLED, arg=f".rc-claim[data-pk='{plan[order[0]][0][0]}'] button")
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        done = 0

        def timed(key: str, target: str, buttons: int, kind: str, ack: str | None = None) -> bool:
            """Press `key`, time it until `target` holds `buttons` buttons (and `ack` reads
            "saved"); True when enough keys are counted."""
            nonlocal done
            page.evaluate(ARM, [target, buttons, ack])
            page.keyboard.press(key)
            page.wait_for_function("() => window.__ms !== null && window.__ack !== null")
            ms, ack_ms = page.evaluate("() => [window.__ms, window.__ack]")
            done += 1
            if done > WARMUP:
                times.append((ms, None if ack is None else ack_ms, kind))
            return len(times) >= n

        for aid in order:
            claims = plan[aid]
            page.wait_for_function(SETTLED, arg=f".rc-claim[data-pk='{claims[0][0]}'] button")
            for i, (pk, verdict) in enumerate(claims):
                if i == len(claims) - 1:
                    enough = timed(
                        KEYS[verdict],
                        ".rc-last-look",
                        1 + len(claims),
                        "last look",
                        f".rc-look[data-pk='{pk}'] .rc-saved",
                    )
                else:
                    enough = timed(
                        KEYS[verdict],
                        f".rc-claim[data-pk='{claims[i + 1][0]}']",
                        7,
                        "claim",
                        f".rc-line[data-pk='{pk}'] .rc-saved",
                    )
                if enough:
                    browser.close()
                    return times
            page.wait_for_function(SETTLED, arg=".rc-last-look button")
            if timed("Enter", ".rc-reveal", 1, "reveal"):
                browser.close()
                return times
            page.wait_for_function(SETTLED, arg=".rc-reveal button")
            page.keyboard.press("N")
        browser.close()
    raise RuntimeError(f"the cycle ran out of claims after {len(times)} verdicts")


def run_case(
    label: str, n_answers: int, verdicts: int, workdir: Path, chunk_chars: int = 0
) -> dict[str, float]:
    db = workdir / f"bench-{n_answers}-{chunk_chars}.db"
    t = time.perf_counter()
    build_db(db, n_answers, chunk_chars=chunk_chars)
    build_s = time.perf_counter() - t
    size = (verdicts + WARMUP) // CLAIMS_PER_ANSWER + 2  # more than enough: commits count too
    _, order = open_cycle(db, size)
    plan = judge_verdicts(db, order)
    with start_app(db, workdir / f"server-{n_answers}-{chunk_chars}.log") as url:
        times = measure(url, plan, order, verdicts)
    by_kind = {
        kind: sorted(ms for ms, _, k in times if k == kind) for kind in ("claim", "last look", "reveal")
    }
    drawn = sorted(ms for ms, _, k in times if k != "reveal")
    acked = sorted(a for _, a, _ in times if a is not None)
    mb = db.stat().st_size / 1e6
    parts = "; ".join(
        f"{kind}: median {statistics.median(ms):.1f} ms, p95 {p95(ms):.1f} ms, n={len(ms)}"
        for kind, ms in by_kind.items()
        if ms
    )
    print(
        f"{label:>16}: {n_answers:>7} answers ({mb:.0f} MB, built in {build_s:.1f}s)  "
        f"verdict -> next claim drawn: median {statistics.median(drawn):6.1f} ms  p95 {p95(drawn):6.1f} ms"
        f"   verdict -> acknowledged: median {statistics.median(acked):6.1f} ms  p95 {p95(acked):6.1f} ms"
        f"   (n={len(drawn)}; {parts})",
        flush=True,
    )
    return {
        "answers": n_answers,
        "drawn_median_ms": statistics.median(drawn),
        "drawn_p95_ms": p95(drawn),
        "ack_median_ms": statistics.median(acked),
        "ack_p95_ms": p95(acked),
        "n": len(drawn),
        **{
            f"{kind.replace(' ', '_')}_median_ms": statistics.median(ms) for kind, ms in by_kind.items() if ms
        },
    }


def p95(sorted_ms: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    return sorted_ms[max(0, math.ceil(0.95 * len(sorted_ms)) - 1)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verdicts", type=int, default=200)
    ap.add_argument("--small", type=int, default=100)
    ap.add_argument("--big", type=int, default=100_000)
    ap.add_argument(
        "--huge-chunk",
        type=int,
        default=1024 * 1024,
        help="characters of the first chunk of every answer in the huge-chunk case (0: skip)",
    )
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = ap.parse_args()
    if not Path(CHROMIUM).is_file():
        print(f"no Chromium at {CHROMIUM}: set $CHROMIUM", file=sys.stderr)
        return 1
    print(
        f"keypress -> next view drawn (verdict -> next claim or last look; Enter -> reveal), "
        f"{args.verdicts} keys each ({WARMUP} warm-up keys not counted), headless Chromium"
    )
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        small = run_case("small database", args.small, args.verdicts, Path(tmp))
        big = run_case("large database", args.big, args.verdicts, Path(tmp))
        # Only the cycle's answers carry the huge chunk (the small case above is its baseline):
        # the cost is in drawing the card, not in the size of the database.
        huge = (
            None
            if not args.huge_chunk
            else run_case(
                "1 MB chunk",
                (args.verdicts + WARMUP) // CLAIMS_PER_ANSWER + 4,
                args.verdicts,
                Path(tmp),
                chunk_chars=args.huge_chunk,
            )
        )
    if args.json:
        print(json.dumps({"small": small, "big": big, "huge_chunk": huge}))
    return 0


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        status = main()
    raise SystemExit(status)
