"""Server CPU per verdict on the review page: what one blind verdict costs the app server, alone.

The load bench (bench_load.py) divides the server's CPU over every action of a step: verdicts,
commits, reconciles, "Next answer" and the lead's Dashboard reruns, which cost ten times a
verdict. This bench isolates the verdict. It builds the load bench's database, starts one app
server on it (and, with --before CHECKOUT, a second one running another checkout's code on a
copy of it, started by this same run), signs in R reviewer sessions on each, and has them
label through the cycle over Streamlit's websocket protocol (bench/load/client.py): every claim
a verdict agreeing with the judge, Enter at the last look, "Next answer" after the reveal.

Actions go one at a time, the servers' sessions taking turns, so nothing else runs on a server
during an action: each action is charged the server process's CPU time (user + system, from
/proc, so it holds on a loaded machine) from just before it is sent until a short settle after
its reply (`SETTLE`, so work the server does after the run's last message counts too). The
figure is the CPU of the verdict actions divided by the verdicts acknowledged (the card's data
carrying the verdict's sequence number); commits and Next are shown beside it. The server's
idle CPU over the same settle time is measured too and is all but zero.

    .venv/bin/python bench/bench_verdict_cpu.py [--before CHECKOUT] [--reviewers 10]
        [--verdicts 300] [--answers N]

CHECKOUT: another checkout of this project, e.g. `git worktree add --detach /tmp/before <commit>`;
its app runs with its own package, against the same database content. A checkout from before
the card was a component (f04f30a, the card the server drew) works too: there a verdict is the
claim's button, acknowledged by the "Saved" toast of its run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_load import (  # noqa: E402
    CARD,
    LEAD,
    SERVER_DRAWN_VERDICT,
    CardScript,
    _page_problems,
    _proc_seconds,
    _server_pid,
    sign_in,
    warm_up,
)
from bench.bench_review_latency import p95  # noqa: E402
from bench.load import data  # noqa: E402
from bench.load.client import ProtocolError, Run, Session  # noqa: E402
from tests.browser.conftest import start_app  # noqa: E402

SETTLE = 0.03  # seconds after a reply before the server's CPU is read again
KINDS = ("verdict", "commit", "next")


@dataclass
class Server:
    """One app server under measurement and what its actions cost."""

    name: str
    url: str
    pid: list[int]
    sessions: list[tuple[Session, CardScript]] = field(default_factory=list)
    cpu: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    wall: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    failures: list[str] = field(default_factory=list)
    idle: list[float] = field(default_factory=list)

    @property
    def verdicts(self) -> int:
        return len(self.cpu["verdict"])

    def ms_per(self, kind: str) -> float:
        xs = self.cpu[kind]
        return 1000 * sum(xs) / len(xs) if xs else float("nan")


async def action(s: Session, script: CardScript, judge: dict[int, str]) -> tuple[str, bool, Run]:
    """The reviewer's next action: a verdict, the commit at the last look, or Next after the
    reveal (every verdict agrees with the judge, so nothing is left to reconcile)."""
    if not s.data_of(CARD):
        return await server_drawn_action(s, judge)
    if script.view is None:
        script.follow(s)
    mode = script.mode()
    if mode == "claim":
        assert script.view is not None and script.index is not None
        _pk, ok, run = await script.verdict(s, judge[script.view["claims"][script.index]["pk"]])
        return "verdict", ok, run
    if mode == "last look":
        ok, run = await script.commit(s)
        return "commit", ok, run
    if mode == "reveal":
        ok, run = await script.next(s)
        return "next", ok, run
    raise ProtocolError("the reviewer's queue is done: make the cycle larger (--answers)")


async def server_drawn_action(s: Session, judge: dict[int, str]) -> tuple[str, bool, Run]:
    """`action` on the card the server drew (a --before checkout from before the card was a
    component): a verdict is its button, acknowledged by the "Saved" toast of that run; the
    commit and Next are the same buttons as now."""
    verdicts = s.key_of(SERVER_DRAWN_VERDICT)
    if verdicts:
        pk = int(verdicts[0].rsplit("-", 1)[1])
        run = await s.press(f"v-{judge[pk]}-{pk}")
        saved = any(t.startswith(f"Saved: {judge[pk]} ") for t in run.toasts)
        return "verdict", saved and not _page_problems(run), run
    for kind, key in (("commit", "commit"), ("next", "next-answer")):
        if key in s.widgets:
            run = await s.press(key)
            return kind, not _page_problems(run), run
    raise ProtocolError("the reviewer's queue is done: make the cycle larger (--answers)")


async def measured(server: Server, i: int, judge: dict[int, str], count: bool) -> None:
    s, script = server.sessions[i]
    before = _proc_seconds(server.pid)
    kind, ok, run = await action(s, script, judge)
    await asyncio.sleep(SETTLE)
    used = _proc_seconds(server.pid) - before
    if not ok:
        server.failures.append(f"{server.name}: reviewer {i}: {kind} not acknowledged")
        return
    if count:
        server.cpu[kind].append(used)
        server.wall[kind].append(run.seconds * 1000)


async def idle(server: Server) -> None:
    before = _proc_seconds(server.pid)
    await asyncio.sleep(SETTLE)
    server.idle.append(_proc_seconds(server.pid) - before)


async def measure(servers: list[Server], lc: data.LoadCycle, reviewers: int, verdicts: int) -> None:
    for k, server in enumerate(servers):
        await warm_up(await sign_in(server.url, f"warm-up {k}", lc.name), lc.judge)
        for i in range(reviewers):
            s = await sign_in(server.url, f"cpu reviewer {i:02d}", lc.name)
            server.sessions.append((s, CardScript()))
    # Two rounds per reviewer first, outside the figures (each session's first runs).
    rounds = 0
    while min(server.verdicts for server in servers) < verdicts:
        for i in range(reviewers):
            for server in servers:
                await measured(server, i, lc.judge, count=rounds >= 2)
                await idle(server)
        rounds += 1
        if any(server.failures for server in servers):
            break
    for server in servers:
        for s, _script in server.sessions:
            await s.close()


def report(servers: list[Server], reviewers: int) -> list[str]:
    out = [
        f"{'code':<14} {'verdicts':>8} {'CPU/verdict':>11} {'CPU/commit':>10} {'CPU/Next':>8} "
        f"{'ack med/p95':>12} {'idle/settle':>11}"
    ]
    for server in servers:
        w = sorted(server.wall["verdict"])
        wall = f"{statistics.median(w):.0f}/{p95(w):.0f}" if w else "-"
        out.append(
            f"{server.name:<14} {server.verdicts:>8} {server.ms_per('verdict'):9.1f}ms "
            f"{server.ms_per('commit'):8.1f}ms {server.ms_per('next'):6.1f}ms {wall:>12} "
            f"{1000 * statistics.mean(server.idle):9.2f}ms"
        )
    if len(servers) == 2 and servers[0].verdicts and servers[1].verdicts:
        was, now = (s.ms_per("verdict") for s in servers)
        out.append(f"server CPU per verdict: {now:.1f} ms against {was:.1f} ms before ({now / was:.0%})")
    out.append(
        f"{reviewers} reviewer sessions per server, actions one at a time; CPU time of the server "
        f"process per action (its reply and {SETTLE * 1000:.0f} ms after), ack in ms (wall, loaded or not)"
    )
    for server in servers:
        out += server.failures[:5]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="another checkout, measured in the same run")
    ap.add_argument("--reviewers", type=int, default=10, help="reviewer sessions per server")
    ap.add_argument("--verdicts", type=int, default=300, help="verdicts measured per server")
    ap.add_argument("--answers", type=int, help="answers in the cycle (default: enough for the run)")
    ap.add_argument("--keep", type=Path, help="keep the databases and server logs in this folder")
    args = ap.parse_args()
    if args.before is not None and not (args.before / "app.py").is_file():
        ap.error(f"--before: {args.before} holds no app.py")
    t0 = time.perf_counter()
    per_reviewer = args.verdicts // args.reviewers + 3
    answers = args.answers or per_reviewer // data.CLAIMS_PER_ANSWER + 10
    os.environ["CALIBRATION_LEADS"] = LEAD
    with tempfile.TemporaryDirectory(prefix="bench-verdict-cpu-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        lc = data.build(work / "this.db", answers)
        runs = [("this checkout", ROOT, work / "this.db")]
        if args.before is not None:
            shutil.copy(work / "this.db", work / "before.db")
            runs.insert(0, ("before", args.before.resolve(), work / "before.db"))
        print(
            f"cycle {lc.name!r}: {lc.answers} answers, {lc.claims} claims; {os.cpu_count()} cores; "
            f"load average {os.getloadavg()[0]:.1f} at the start",
            flush=True,
        )
        with contextlib.ExitStack() as stack:
            servers = []
            for name, root, db in runs:
                url = stack.enter_context(start_app(db, work / f"{db.stem}.log", root=root))
                servers.append(Server(name, url, _server_pid(url)))
            asyncio.run(measure(servers, lc, args.reviewers, args.verdicts))
        for line in report(servers, args.reviewers):
            print(line)
        for name, _root, db in runs:
            log = (work / f"{db.stem}.log").read_text(errors="replace")
            if "Traceback" in log:
                print(f"the {name} server's log holds a Traceback:")
                print("\n".join(log.splitlines()[-20:]))
        print(f"load average {os.getloadavg()[0]:.1f} at the end; total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        status = main()
    raise SystemExit(status)
