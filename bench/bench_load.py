"""Load test: N reviewers labeling at once against one app server, plus a lead on the Dashboard.

Builds a database (the demo, plus generated judged answers in one open cycle, large enough
that no reviewer runs out of work), starts ONE app server (`streamlit run app.py`, through
the browser suite's `start_app`), then for each N in turn runs N simultaneous reviewer
sessions and one lead session for a fixed time, and prints per N:

- verdicts: blind verdicts sent during the run, by all reviewers together;
- verdict -> acknowledged, median and p95 (ms): from sending the review card's request for a
  verdict to the card's route (the next claim is drawn in the browser at once) to its reply
  naming the label event written (bench_review_latency.py measures the same in Chromium);
- commit, reconcile, next p95 (ms): the card's request for each to its reply, which carries
  all the card draws next (the reveal, the next answer with its chunks, the progress line): no
  run of the page follows, except at the end of the queue (not timed);
- lead: median / p95 of the Dashboard's full reruns, each recomputing the figures since
  labels keep arriving;
- failed: verdicts the page did not acknowledge (the card's data without it, an error or a
  traceback on the page, a timeout), plus acknowledged verdicts missing from SQLite when
  the label rows of each reviewer are counted after the run;
- CPU, in percent of one core over the run: the app server's process, this client's
  process (all the sessions), and the rest of the machine (every other process; this
  machine has 2 cores, so 200% is all of it). Before each step the bench waits, for a
  bounded time, until other processes leave the cores free (--quiet, --quiet-wait); a
  step they still shared is named under the table;
- chromium (with --browser): one of the N reviewers is a real headless Chromium page
  instead (bench/load/browser.py), timed inside the page from keydown to the next card
  drawn; that figure adds the browser's own work to the server's.

A session is one browser tab as the server sees it: one websocket to Streamlit's
`/_stcore/stream`, hence one Streamlit session with its own session state and script runs,
and the card's requests to its route over the tab's HTTP connection.
The client (bench/load/client.py) sends the messages a browser sends (taken from what
headless Chromium sends to this app) and reads the replies, without drawing them. So the
latency is the server's: Streamlit's handling, the page script (callback, SQLite write,
reads, drawing) and the websocket on 127.0.0.1, with nothing of a browser's work; the
browser's own drawing time on top is what bench_review_latency.py measures for one
reviewer in Chromium. One Python process holds all the sessions; its CPU share in the table
shows whether the client, rather than the server, was short of CPU. Dozens of Chromium
pages on this 2-core machine would measure the browsers instead.

A reviewer signs in by name on the Review page, picks the load-test cycle in the cycle
picker, then labels: one verdict every 2-5 s (uniform, seeded), agreeing with the judge 4
times in 5; after the reveal it settles each disagreement (keep or judge right, 1-2 s
each) and goes on with "Next answer" (1-2 s). The lead (a configured lead) signs in on the
Dashboard and reruns it every 3-6 s. Each N uses fresh reviewer names, so everyone starts
at the top of the cycle; sign-in is not timed. The steps stop once p95 passes 1 s
(--keep-going: not).

Engines (--engine, --servers): SQLite with one app server (the default), or PostgreSQL (a
throwaway local server, tests/pg_server.py) with 1, 2 or 3 app-server processes on the one
database; reviewer i's session stays on server i mod S all along, as a reverse proxy with sticky
sessions keeps a Streamlit websocket on one server, and the lead uses the first. "CPU server"
is then all the app servers together; the PostgreSQL server's processes count under "rest".

    .venv/bin/python bench/bench_load.py [--reviewers 1,5,10,25,40,60] [--seconds 60]
        [--engine sqlite|postgresql] [--servers 1] [--keep-going] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_review_latency import p95  # noqa: E402
from bench.load import data  # noqa: E402
from bench.load.browser import Probe, probe  # noqa: E402
from bench.load.client import ProtocolError, Run, Session  # noqa: E402
from tests.browser.conftest import start_app  # noqa: E402

LEAD = "load lead"
SIGN_IN = ("signin_name", "FormSubmitter:signin-Sign in")
VERDICT_PAUSE = (2.0, 5.0)  # seconds a reviewer reads before each verdict
OTHER_PAUSE = (1.0, 2.0)  # before a reconcile choice or "Next answer"
LEAD_PAUSE = (3.0, 6.0)
AGREE = 0.8
LIMIT_MS = 1000.0
TARGET = (25, 300.0)  # reviewers, p95 ms: the verdict's first target on this machine
# Every card action (verdict, commit, reconcile, next): p95 within 300 ms up to 240 reviewers
# and within 1 s up to 480, on one server.
ACTION_TARGETS = ((240, 300.0), (480, 1000.0))
ACTION_TIMEOUT = 60.0  # a run that takes longer counts as failed


# ---------------------------------------------------------------- one reviewer


@dataclass
class Tally:
    """What one session saw; merged over the sessions of a step."""

    verdict_ms: list[float] = field(default_factory=list)
    other_ms: list[float] = field(default_factory=list)
    lead_ms: list[float] = field(default_factory=list)
    acked: dict[str, int] = field(default_factory=dict)  # reviewer -> verdicts acknowledged
    failures: list[str] = field(default_factory=list)
    out_of_work: int = 0
    browser_ms: list[float] = field(default_factory=list)  # the Chromium probe's, if any
    kind_ms: dict[str, list[float]] = field(default_factory=dict)  # action -> times (ms)

    def merge(self, other: Tally) -> None:
        self.verdict_ms += other.verdict_ms
        self.other_ms += other.other_ms
        self.lead_ms += other.lead_ms
        self.acked.update(other.acked)
        self.failures += other.failures
        self.out_of_work += other.out_of_work
        for kind, times in other.kind_ms.items():
            self.kind_ms.setdefault(kind, []).extend(times)


def _page_problems(run: Run) -> list[str]:
    return [*run.errors, *run.exceptions]


def _dashboard_problems(run: Run) -> list[str]:
    """A traceback, or the page's own failure box (its flag is an st.error when it says revise)."""
    return [*run.exceptions, *(e for e in run.errors if "could not be computed" in e)]


async def _pause(rng: random.Random, span: tuple[float, float], until: float) -> bool:
    """Sleep a human pause and say True; say False at once if the pause would end after `until`."""
    wait = rng.uniform(*span)
    if time.perf_counter() + wait >= until:
        return False
    await asyncio.sleep(wait)
    return True


async def sign_in(url: str, name: str, cycle_name: str, page: str = "review") -> Session:
    """Open `page`, sign in as `name`; on the Review page, pick the load-test cycle."""
    s = Session(url, timeout=ACTION_TIMEOUT)
    run = await s.open(page)
    run = await s.submit_form(SIGN_IN[0], name, SIGN_IN[1])
    problems = _page_problems(run) if page == "review" else _dashboard_problems(run)
    if problems:
        raise ProtocolError(f"{name}: sign-in showed {problems}")
    if page == "review":
        picks = s.key_of(r"review_cycle_pick_.*")
        if picks:
            options = [o for o in s.widgets[picks[0]].options if o.startswith(cycle_name + " — ")]
            if not options:
                raise ProtocolError(f"{name}: no {cycle_name!r} in the cycle picker")
            await s.choose(picks[0], options[0])
        if card_data(s).get("mode") != "claim":
            raise ProtocolError(f"{name}: no claim card after sign-in ({sorted(s.widgets)})")
    return s


CARD = "review_card"  # the review card component's key (pages/review.py)
# A verdict button of the card the server drew, before the card was a component: in a --before
# checkout of that code, bench_verdict_cpu.py presses these instead.
SERVER_DRAWN_VERDICT = r"v-SUPPORTED-\d+"


def card_data(s: Session) -> dict[str, Any]:
    """The card's data as the page sent it, with its view (the JSON text "view") read."""
    d = s.data_of(CARD) or {}
    return {**d, **json.loads(d["view"])} if isinstance(d.get("view"), str) else d


@dataclass
class CardScript:
    """What the review card's script keeps in one tab (calibration_app/components/review_card.js):
    the answer's view, the claim shown, the label event it knows for each claim; and what it
    sends: one request to the card's route per key that writes, each timed from send to reply."""

    view: dict[str, Any] | None = None
    seen: str | None = None  # the view text last taken from the page
    index: int | None = None
    events: dict[int, int | None] = field(default_factory=dict)
    labeled: set[int] = field(default_factory=set)
    route: dict[str, Any] = field(default_factory=dict)
    moves: int = 0

    def follow(self, s: Session) -> None:
        """The page's data for the card: a view it has not taken yet replaces the card's."""
        d = s.data_of(CARD) or {}
        self.route = d.get("route") or self.route
        if d.get("view") != self.seen:
            self.seen = d.get("view")
            self.take(json.loads(d["view"]) if isinstance(d.get("view"), str) else None)

    def take(self, view: dict[str, Any] | None) -> None:
        if view is None or self.view is None or view["answer"] != self.view["answer"]:
            self.index = view.get("index") if view else None
            self.labeled = set()
        self.view = view
        self.events = {c["pk"]: c["event"] for c in view["claims"]} if view else {}

    def mode(self) -> str:
        """ "claim", "last look", "reveal" or "done", as the card has it."""
        if self.view is None:
            return "done"
        if self.view["mode"] == "reveal":
            return "reveal"
        return "claim" if self.index is not None else "last look"

    def pending(self) -> list[int]:
        """The reveal's disagreements still to decide."""
        return [r["pk"] for r in (self.view or {}).get("reveal", {}).get("rows", []) if r["pending"]]

    async def _send(self, s: Session, request: dict[str, Any]) -> tuple[bool, dict[str, Any], Run]:
        assert self.view is not None
        run = Run(sent_at=time.perf_counter())
        body = {k: self.route[k] for k in ("token", "cycle", "reviewer")}
        status, out = await s.post_json(
            self.route["url"], {**body, "request": {"answer": self.view["answer"], **request}}
        )
        run.finished_at = time.perf_counter()
        if status != 200 or not isinstance(out, dict):
            run.errors.append(f"the card's route answered {status}: {out}")
            return False, {}, run
        if not out.get("ok"):
            run.errors.append(f"refused: {out.get('refused')}")
        return bool(out.get("ok")), out, run

    async def verdict(self, s: Session, verdict: str) -> tuple[int, bool, Run]:
        """A verdict key on the claim shown: (its pk, acknowledged, the request). The next claim
        is drawn by the card at once (the next one never labeled, wrapping; else the last look)."""
        assert self.view is not None and self.index is not None
        claims = self.view["claims"]
        pk = claims[self.index]["pk"]
        request = {"do": "label", "claim": pk, "kind": "blind", "verdict": verdict, "ms": 2000}
        ok, out, run = await self._send(s, {**request, "base": self.events.get(pk)})
        if ok:
            self.events[pk] = out["event"]
            self.labeled.add(pk)
        n = len(claims)
        later = [(self.index + k) % n for k in range(1, n + 1)]
        todo = [i for i in later if claims[i]["status"] == "todo" and claims[i]["pk"] not in self.labeled]
        self.index = todo[0] if todo else None
        return pk, ok, run

    async def commit(self, s: Session) -> tuple[bool, Run]:
        """Enter at the last look: the reveal (and the progress line) comes in the reply."""
        seen = {str(pk): event for pk, event in self.events.items()}
        ok, out, run = await self._send(s, {"do": "commit", "seen": seen})
        if ok:
            self.take(out["view"])
        return ok and self.mode() == "reveal", run

    async def reconcile(self, s: Session, pk: int, choice: str) -> tuple[bool, Run]:
        ok, out, run = await self._send(
            s, {"do": "reconcile", "claim": pk, "choice": choice, "base": self.events.get(pk)}
        )
        if ok:
            self.take(out["view"])
        return ok, run

    async def next(self, s: Session) -> tuple[bool, Run]:
        """N: the next answer (its chunks and progress) comes in the reply, drawn by the card; the
        end of the queue runs the page, which draws it (not timed)."""
        ok, out, run = await self._send(s, {"do": "next"})
        if ok:
            self.moves += 1
            self.take(None if out.get("done") else out["view"])
            if out.get("done"):
                await self._page(s, s.set_state(CARD, "answer", {"answer": None, "move": self.moves}))
        return ok, run

    async def _page(self, s: Session, sent: Awaitable[Run]) -> None:
        """The page's run the card's state or event starts (not timed)."""
        run = await sent
        if _page_problems(run):
            raise ProtocolError(f"the page's run after the card's event showed {_page_problems(run)}")
        self.follow(s)


async def reviewer(
    s: Session, name: str, judge: dict[int, str], seed: int, until: float, tally: Tally
) -> None:
    rng = random.Random(seed)
    acked = 0
    script = CardScript()
    script.follow(s)
    try:
        while True:
            mode = script.mode()
            if mode == "done":
                tally.out_of_work += 1  # the cycle was too small for the run
                break
            if not await _pause(rng, VERDICT_PAUSE if mode == "claim" else OTHER_PAUSE, until):
                break
            try:
                kind, ok, run = await _act(script, s, judge, rng)
            except TimeoutError:
                tally.failures.append(f"{name}: {mode}: no reply in {ACTION_TIMEOUT:.0f} s")
                break
            if not ok:
                tally.failures.append(f"{name}: {kind}: {run.errors or 'not acknowledged'}")
            elif kind == "verdict":
                acked += 1
            ms = run.seconds * 1000
            tally.kind_ms.setdefault(kind, []).append(ms)
            if kind == "verdict":
                tally.verdict_ms.append(ms)
            else:
                tally.other_ms.append(ms)
    finally:
        tally.acked[name] = acked
        await s.close()


async def _act(
    script: CardScript, s: Session, judge: dict[int, str], rng: random.Random
) -> tuple[str, bool, Run]:
    """The reviewer's next key: a verdict (agreeing with the judge 4 times in 5), the commit at
    the last look, a reconcile choice on a disagreement, or the next answer."""
    mode = script.mode()
    if mode == "claim":
        assert script.view is not None and script.index is not None
        truth = judge[script.view["claims"][script.index]["pk"]]
        others = [v for v in data.VERDICTS if v != truth]
        _pk, ok, run = await script.verdict(s, truth if rng.random() < AGREE else rng.choice(others))
        return "verdict", ok, run
    if mode == "last look":
        ok, run = await script.commit(s)
        return "commit", ok, run
    pending = script.pending()
    if pending:
        ok, run = await script.reconcile(s, pending[0], "keep" if rng.random() < 0.5 else "judge_right")
        return "reconcile", ok, run
    ok, run = await script.next(s)
    return "next", ok, run


async def lead(s: Session, seed: int, until: float, tally: Tally) -> None:
    rng = random.Random(seed)
    try:
        while await _pause(rng, LEAD_PAUSE, until):
            run = await s.rerun()
            if _dashboard_problems(run):
                tally.failures.append(f"lead: dashboard showed {_dashboard_problems(run)}")
            tally.lead_ms.append(run.seconds * 1000)
    finally:
        await s.close()


# ---------------------------------------------------------------- CPU


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all cores, from /proc/stat."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _server_pid(url: str | None = None) -> list[int]:
    """The app servers: this process's children running streamlit (start_app's subprocesses);
    with `url`, the one serving it."""
    me = os.getpid()
    port = f"\0{url.rsplit(':', 1)[1]}\0".encode() if url else b""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me and b"streamlit" in cmd and port in cmd:
            found.append(int(entry))
    return found


def _proc_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as fh:
            after = fh.read().rsplit(")", 1)[1].split()
        total += (int(after[11]) + int(after[12])) / os.sysconf("SC_CLK_TCK")
    return total


@dataclass
class Cpu:
    # All in percent of one core (this machine has os.cpu_count() of them).
    machine: float  # every process
    server: float  # the app server
    client: float  # this process, all the sessions

    @property
    def other(self) -> float:
        return max(0.0, self.machine - self.server - self.client)


class CpuMeter:
    def __init__(self, server_pid: list[int]) -> None:
        self.pid = server_pid
        self.t = time.perf_counter()
        self.ticks = _machine_ticks()
        self.server = _proc_seconds(server_pid)
        self.client = time.process_time()

    def read(self) -> Cpu:
        wall = time.perf_counter() - self.t
        busy, total = _machine_ticks()
        cores = os.cpu_count() or 1
        machine = 100 * cores * (busy - self.ticks[0]) / max(1, total - self.ticks[1])
        return Cpu(
            machine,
            100 * (_proc_seconds(self.pid) - self.server) / wall,
            100 * (time.process_time() - self.client) / wall,
        )


# ---------------------------------------------------------------- a step


@dataclass
class Step:
    n: int
    tally: Tally
    cpu: Cpu
    db_short: int  # acknowledged verdicts with no label row in SQLite
    db_extra: int  # label rows beyond the acknowledged verdicts
    seconds: float

    @property
    def server_ms_per_action(self) -> float:
        t = self.tally
        actions = len(t.verdict_ms) + len(t.other_ms) + len(t.lead_ms) + len(t.browser_ms)
        return 10 * self.cpu.server * self.seconds / max(1, actions)

    @property
    def failed(self) -> int:
        return len([f for f in self.tally.failures if not f.startswith("lead:")]) + self.db_short

    @property
    def p95_ms(self) -> float:
        return p95(sorted(self.tally.verdict_ms)) if self.tally.verdict_ms else float("nan")


async def run_step(
    urls: list[str], lc: data.LoadCycle, db_path: Path | str, n: int, seconds: float, seed: int, browser: bool
) -> Step:
    """N reviewers (with `browser`, the last of them in Chromium) and the lead, `seconds` long;
    reviewer i on server i mod len(urls) (sticky), the lead on the first."""
    url = urls[0]
    names = [f"reviewer {n:02d}-{i:02d}" for i in range(n)]
    ws_names = names[:-1] if browser else names
    pr = Probe(names[-1], seed * 1000 + n, VERDICT_PAUSE, OTHER_PAUSE, AGREE) if browser else None
    probe_task = asyncio.create_task(probe(url, lc.name, lc.judge, pr)) if pr else None

    # Arrivals spread over up to 3 s, as a team opening the page, not one burst.
    async def arrive(i: int, name: str) -> Session:
        await asyncio.sleep(i * min(0.1, 3.0 / n))
        return await sign_in(urls[i % len(urls)], name, lc.name)

    lead_session, *sessions = await asyncio.gather(
        sign_in(url, LEAD, lc.name, page="dashboard"), *(arrive(i, nm) for i, nm in enumerate(ws_names))
    )
    if pr:
        try:
            await asyncio.wait_for(pr.signed_in.wait(), ACTION_TIMEOUT)
        except TimeoutError:
            pr.failures.append(f"{pr.name} (Chromium): not signed in after {ACTION_TIMEOUT:.0f} s")
    meter = CpuMeter(_server_pid())
    until = time.perf_counter() + seconds
    if pr:
        pr.until = until
        pr.go.set()
    tallies = [Tally() for _ in range(len(ws_names) + 1)]
    await asyncio.gather(
        lead(lead_session, seed * 1000, until, tallies[-1]),
        *(
            reviewer(s, nm, lc.judge, seed * 1000 + i + 1, until, tallies[i])
            for i, (s, nm) in enumerate(zip(sessions, ws_names, strict=True))
        ),
        *([probe_task] if probe_task else []),
    )
    cpu = meter.read()
    tally = Tally()
    for t in tallies:
        tally.merge(t)
    if pr:
        tally.acked[pr.name] = pr.acked
        tally.browser_ms = pr.ms
        tally.failures += pr.failures
    counts = data.label_counts(db_path, lc.cycle_id)
    short = extra = 0
    for name in names:
        rows, events = counts.get(name, (0, 0))
        acked = tally.acked.get(name, 0)
        short += max(0, acked - min(rows, events))
        extra += max(0, max(rows, events) - acked)
        if rows != events:
            tally.failures.append(f"{name}: {rows} label rows but {events} verdict events")
    return Step(n, tally, cpu, short, extra, seconds)


# ---------------------------------------------------------------- report


ACTIONS = ("commit", "reconcile", "next")
HEADER = (
    f"{'N':>3} {'verdicts':>8} {'median':>7} {'p95':>7} {'max':>7} "
    + " ".join(f"{a + ' p95':>13}" for a in ACTIONS)
    + f" {'lead med/p95':>13} {'failed':>6} {'CPU server':>10} {'client':>6} {'rest':>5}"
    + f"{'  chromium med/p95':>18}"
)


def row(st: Step) -> str:
    v = sorted(st.tally.verdict_ms)
    lead_ms = sorted(st.tally.lead_ms)

    def f(x: float) -> str:
        return f"{x:7.0f}"

    def action(kind: str) -> str:
        times = sorted(st.tally.kind_ms.get(kind, []))
        return f"{p95(times):.0f} (n={len(times)})" if times else "-"

    lead_txt = f"{statistics.median(lead_ms):.0f}/{p95(lead_ms):.0f}" if lead_ms else "-"
    b = sorted(st.tally.browser_ms)
    browser_txt = f"{statistics.median(b):.0f}/{p95(b):.0f} (n={len(b)})" if b else "-"
    return (
        f"{st.n:>3} {len(v):>8} {f(statistics.median(v)) if v else '      -'} "
        f"{f(p95(v)) if v else '      -'} {f(v[-1]) if v else '      -'} "
        + " ".join(f"{action(a):>13}" for a in ACTIONS)
        + f" {lead_txt:>13} {st.failed:>6} {st.cpu.server:9.0f}% {st.cpu.client:5.0f}% "
        f"{st.cpu.other:4.0f}%  {browser_txt:>16}"
    )


async def other_cpu(pid: list[int], seconds: float = 2.0) -> float:
    """CPU used by processes other than the server and this one, % of a core, over `seconds`."""
    meter = CpuMeter(pid)
    await asyncio.sleep(seconds)
    return meter.read().other


async def warm_up(s: Session, judge: dict[int, str], verdicts: int = 3) -> None:
    """A few verdicts in a session of its own, then close it: the server's first imports and
    queries happen outside the figures."""
    script = CardScript()
    script.follow(s)
    for _ in range(verdicts):
        if script.mode() != "claim" or script.view is None or script.index is None:
            break
        await script.verdict(s, judge[script.view["claims"][script.index]["pk"]])
    await s.close()


async def sweep(
    urls: list[str],
    lc: data.LoadCycle,
    db_path: Path | str,
    ns: list[int],
    seconds: float,
    budget: float,
    t0: float,
    browser: bool,
    quiet: float,
    quiet_wait: float,
    keep_going: bool = False,
) -> list[Step]:
    # Warm the servers up (first imports, first queries) outside the figures.
    for k, url in enumerate(urls):
        await warm_up(await sign_in(url, f"warm-up {k}", lc.name), lc.judge)
    steps: list[Step] = []
    print(HEADER, flush=True)
    pid = _server_pid()
    for k, n in enumerate(ns):
        if time.perf_counter() - t0 + seconds + 5 + 0.1 * n > budget:
            print(f"(stopped before N={n}: the time budget of {budget:.0f} s would be exceeded)", flush=True)
            break
        # The cores are shared with whatever else runs here: wait (bounded) for them to be
        # free, and report what the other processes took during the step ("rest").
        rest, waited = await other_cpu(pid), 0.0
        while rest > quiet and waited < quiet_wait and time.perf_counter() - t0 + seconds + 10 < budget:
            rest = await other_cpu(pid)
            waited += 2.0
        try:
            st = await run_step(urls, lc, db_path, n, seconds, seed=k + 1, browser=browser)
        except (ProtocolError, TimeoutError, OSError) as exc:
            # A session that cannot even sign in is a result too: say so and stop here.
            print(f"N={n}: the step could not run: {type(exc).__name__}: {exc}", flush=True)
            break
        steps.append(st)
        print(row(st), flush=True)
        if st.p95_ms > LIMIT_MS and not keep_going:
            break
    return steps


def _targets(st: Step) -> list[str]:
    """Each action's p95 against its target at this N (`ACTION_TARGETS`), or nothing."""
    target = next((ms for n, ms in ACTION_TARGETS if st.n <= n), None)
    if target is None:
        return []
    times = {"verdict": st.tally.verdict_ms, **{a: st.tally.kind_ms.get(a, []) for a in ACTIONS}}
    p95s = {a: p95(sorted(t)) for a, t in times.items() if t}
    over = [f"{a} {ms:.0f}" for a, ms in p95s.items() if ms > target]
    shown = ", ".join(f"{a} {ms:.0f}" for a, ms in p95s.items())
    if over:
        return [f"N={st.n}: over the target p95 <= {target:.0f} ms: {', '.join(over)} (all: {shown})"]
    return [f"N={st.n}: every action within the target p95 <= {target:.0f} ms ({shown})"]


def summary(steps: list[Step], seconds: float, quiet: float) -> list[str]:
    out = [line for st in steps for line in _targets(st)]
    fast = next((s for s in steps if s.p95_ms > TARGET[1]), None)
    largest = steps[-1].n if steps else 0
    out.append(
        f"verdict p95 first over {TARGET[1]:.0f} ms at N={fast.n} (p95 {fast.p95_ms:.0f} ms)"
        if fast
        else f"verdict p95 stayed within {TARGET[1]:.0f} ms up to N={largest}, the largest N run"
    )
    over = next((s for s in steps if s.p95_ms > LIMIT_MS), None)
    under = [s for s in steps if s.p95_ms <= LIMIT_MS]
    if over is not None:
        last = f" (p95 {under[-1].p95_ms:.0f} ms at N={under[-1].n})" if under else ""
        out.append(f"verdict p95 first over 1 s at N={over.n} (p95 {over.p95_ms:.0f} ms){last}")
    elif steps:
        out.append(f"verdict p95 stayed within 1 s up to N={steps[-1].n}, the largest N run")
    n_t, ms_t = TARGET
    at = next((s for s in steps if s.n == n_t), None)
    if at is not None:
        ok = at.p95_ms <= ms_t and at.failed == 0
        out.append(
            f"target {n_t} reviewers with p95 <= {ms_t:.0f} ms and no failed write: "
            f"{'met' if ok else 'NOT met'} (p95 {at.p95_ms:.0f} ms, {at.failed} failed)"
        )
    busy = [s for s in steps if s.cpu.other > quiet]
    if busy:
        out.append(
            "other processes took more than "
            + f"{quiet:.0f}% of a core during N="
            + ", ".join(f"{s.n} ({s.cpu.other:.0f}%)" for s in busy)
            + ": the server shared the cores, so those rows understate what it can carry"
        )
    out.append(
        "server CPU per action (verdicts, reconciles, Next, lead reruns), ms: "
        + ", ".join(f"N={s.n}: {s.server_ms_per_action:.0f}" for s in steps)
    )
    for s in steps:
        if s.tally.out_of_work:
            out.append(
                f"N={s.n}: {s.tally.out_of_work} reviewers ran out of claims before "
                f"{seconds:.0f} s (make the cycle larger)"
            )
        if s.db_extra:
            out.append(f"N={s.n}: {s.db_extra} label rows written without an acknowledgement")
        for f in s.tally.failures[:5]:
            out.append(f"N={s.n}: {f}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--reviewers",
        default="1,5,10,25,40,60",
        help="comma-separated N, run in this order (default 1,5,10,25,40,60)",
    )
    ap.add_argument("--seconds", type=float, default=60.0, help="labeling time per N")
    ap.add_argument(
        "--budget",
        type=float,
        default=480.0,
        help="seconds for the whole run; a step that would pass it is not started",
    )
    ap.add_argument("--keep", type=Path, help="keep the database and server log in this folder")
    ap.add_argument(
        "--browser",
        action="store_true",
        help="make one of the N reviewers a real headless Chromium page (its figure "
        "includes the browser's drawing)",
    )
    ap.add_argument(
        "--quiet",
        type=float,
        default=30.0,
        help="before a step, wait until other processes use less than this %% of a core",
    )
    ap.add_argument(
        "--quiet-wait", type=float, default=30.0, help="seconds to wait for that at most, per step"
    )
    ap.add_argument(
        "--keep-going",
        action="store_true",
        help="run every N asked for, also after a step's verdict p95 passed 1 s",
    )
    ap.add_argument(
        "--out",
        type=Path,
        help="also write the table and the summary to this file (e.g. under docs/figures/)",
    )
    ap.add_argument(
        "--engine",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="the store: one SQLite file, or a throwaway local PostgreSQL server",
    )
    ap.add_argument(
        "--servers",
        type=int,
        default=1,
        help="app-server processes on the one database (PostgreSQL only; 1-3)",
    )
    args = ap.parse_args()
    if args.servers < 1 or (args.engine == "sqlite" and args.servers != 1):
        ap.error("--servers: 1 with SQLite (one server owns the file), 1 or more with PostgreSQL")
    ns = [int(x) for x in args.reviewers.split(",") if x.strip()]
    if not ns or min(ns) < 1:
        ap.error("--reviewers: positive integers")
    t0 = time.perf_counter()
    # Enough answers that the fastest reviewer (a verdict every 2 s) never finishes the cycle.
    answers = int(args.seconds / VERDICT_PAUSE[0] / data.CLAIMS_PER_ANSWER) + 10
    os.environ["CALIBRATION_LEADS"] = LEAD  # reviewers are not leads; the lead is
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        sqlite_db = work / "load.db"
        lc = data.build(sqlite_db, answers)
        db_path: Path | str = sqlite_db
        cluster = None
        if args.engine == "postgresql":  # the same database, copied as migrate-db does
            from calibration import backup, store
            from tests.pg_server import Cluster

            cluster = Cluster()
            db_path = cluster.new_database()
            with store.session(sqlite_db) as source, store.session(db_path) as target:
                backup.copy_store(source, target)
        print(
            f"{len(ns)} steps of {args.seconds:.0f} s, {args.engine} with {args.servers} app "
            "server(s) on 127.0.0.1, "
            f"{os.cpu_count()} cores; cycle {lc.name!r}: {lc.answers} answers, {lc.claims} claims; "
            f"a verdict every {VERDICT_PAUSE[0]:.0f}-{VERDICT_PAUSE[1]:.0f} s per reviewer, "
            f"one lead rerunning the Dashboard every {LEAD_PAUSE[0]:.0f}-{LEAD_PAUSE[1]:.0f} s; "
            "times in ms",
            flush=True,
        )
        try:
            with contextlib.ExitStack() as servers:
                urls = [
                    servers.enter_context(start_app(db_path, work / f"server{k}.log"))
                    for k in range(args.servers)
                ]
                steps = asyncio.run(
                    sweep(
                        urls,
                        lc,
                        db_path,
                        ns,
                        args.seconds,
                        args.budget,
                        t0,
                        args.browser,
                        args.quiet,
                        args.quiet_wait,
                        args.keep_going,
                    )
                )
        finally:
            if cluster is not None:
                cluster.stop()
        log = "\n".join((work / f"server{k}.log").read_text(errors="replace") for k in range(args.servers))
        lines = summary(steps, args.seconds, args.quiet)
        for line in lines:
            print(line)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(
                "\n".join([HEADER, *(row(s) for s in steps), *lines]) + "\n", encoding="utf-8"
            )
        if "Traceback" in log:
            print("the server log holds a Traceback:")
            print("\n".join(log.splitlines()[-20:]))
        print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        status = main()
    raise SystemExit(status)
