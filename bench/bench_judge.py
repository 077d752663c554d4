"""Judge lab throughput: claims/s at concurrency 1, 8 and 32, and the client's overhead per call.

Runs against tests/judge_stub.py (the same OpenAI-compatible stub the tests use), started
in a child process so the server's Python threads do not compete with the client for the
GIL. Every figure is end to end through `judge.run_lab`: prompt rendering, HTTP, reply
validation and the SQLite write of each answer.

    .venv/bin/python bench/bench_judge.py [--answers N] [--latency-ms MS]

Then the calls a run cannot use: requests sent before the run stops against an endpoint
answering HTTP 405 and against a model that never replies in JSON (the issue's 105 and 210
requests), and the peak memory of a run given a 50 MB reply (a fresh process each).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import judge, store  # noqa: E402
from calibration.importing import import_answers  # noqa: E402

CLAIMS_PER_ANSWER = 3


def _serve(latency: float, conn, default: object = "ok") -> None:  # child process
    from tests.judge_stub import StubServer

    stub = StubServer(latency=latency, record=False, default=default).start()
    conn.send(stub.base_url)
    conn.recv()  # block until the parent says stop
    stub.stop()


class ChildStub:
    def __init__(self, latency: float, default: object = "ok") -> None:
        self.latency = latency
        self.default = default

    def __enter__(self) -> str:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(self.latency, child, self.default), daemon=True)
        self._proc.start()
        return self._conn.recv()

    def __exit__(self, *exc: object) -> None:
        self._conn.send("stop")
        self._proc.join(5)


def make_db(directory: Path, answers: int) -> Path:
    path = directory / "bench.db"
    rows = []
    for i in range(answers):
        aid = f"B{i:05d}"
        rows.append(
            {
                "id": aid,
                "question": f"What is the lead time for order {i}?",
                "answer": "Ten working days, counted after payment. Shipping is free.",
                "chunks": [
                    {"id": f"S{k}", "text": "Standard delivery is ten working days after payment. " * 8}
                    for k in range(1, 4)
                ],
                "claims": [
                    {"id": f"{aid}.c{j}", "claim": f"Claim {j} of {aid}.", "verdict": "SUPPORTED"}
                    for j in range(1, CLAIMS_PER_ANSWER + 1)
                ],
                "judge_model": "bench-base",
                "judge_prompt_version": "v0",
            }
        )
    src = directory / "answers.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    with store.session(path) as db:
        import_answers(db, src)
    return path


@dataclass(frozen=True)
class Figure:
    wall_s: float
    cpu_s: float  # this process only (client, its writer thread); the stub is a child process
    calls: int
    claims: int


def measure(db: Path, base_url: str, concurrency: int, tag: str, repeats: int) -> Figure:
    """Best of `repeats` (the machine may be shared: the fastest run is the least disturbed)."""
    template = judge.load_template(judge.DEFAULT_TEMPLATE)
    best: Figure | None = None
    for rep in range(repeats):
        config = judge.JudgeConfig(
            base_url=base_url, model=f"bench-{tag}-{rep}", concurrency=concurrency, timeout=10, api_key_env=""
        )
        c0, t0 = time.process_time(), time.perf_counter()
        s = judge.run_lab(config, template, scope="all", db_path=db)
        fig = Figure(time.perf_counter() - t0, time.process_time() - c0, s.answers_ok, s.claims_judged)
        assert s.answers_failed == 0, s.failures[:3]
        if best is None or fig.wall_s < best.wall_s:
            best = fig
    assert best is not None
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--answers", type=int, default=192)
    ap.add_argument("--latency-ms", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    latency = args.latency_ms / 1000

    with tempfile.TemporaryDirectory() as tmp:
        db = make_db(Path(tmp), args.answers)
        print(
            f"{args.answers} answers x {CLAIMS_PER_ANSWER} claims, one call per answer, best of "
            f"{args.repeats}; stub latency {args.latency_ms:g} ms (stub in a child process)"
        )
        with ChildStub(latency) as url:
            measure(db, url, 4, "warmup", 1)
            figs = {c: measure(db, url, c, f"c{c}", args.repeats) for c in (1, 8, 32)}
        for c, f in figs.items():
            ceiling = f.claims / (f.calls * latency / c) if latency else float("inf")
            print(
                f"  concurrency {c:>2}: {f.claims / f.wall_s:8.1f} claims/s  ({f.calls / f.wall_s:6.1f} "
                f"calls/s; latency-bound ceiling {ceiling:,.0f} claims/s; client CPU "
                f"{f.cpu_s / f.calls * 1000:.2f} ms/call)"
            )
        f1 = figs[1]
        print(
            f"  client overhead per call, concurrency 1: {(f1.wall_s / f1.calls - latency) * 1000:.2f} ms "
            "wall (time per call minus stub latency)"
        )
        with ChildStub(0.0) as url:
            measure(db, url, 1, "z-warmup", 1)
            z = measure(db, url, 1, "z1", args.repeats)
        print(
            f"  zero-latency stub, concurrency 1: {z.wall_s / z.calls * 1000:.2f} ms wall per call end to "
            f"end (client + loopback HTTP + stub + SQLite write); client CPU "
            f"{z.cpu_s / z.calls * 1000:.2f} ms per call"
        )
        wasted(db)
    return 0


PEAK_CHILD = """
import sys
from calibration import judge
cfg = judge.JudgeConfig(base_url=sys.argv[2], model="huge", api_key_env="", max_attempts=2)
tpl = judge.PromptTemplate("huge", judge.load_template("grounding-v1").text)
s = judge.run_lab(cfg, tpl, db_path=sys.argv[1], scope="all")
with open("/proc/self/status") as fh:
    peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
print(peak // 1024, s.answers_failed, s.failures[0][1])
"""


def wasted(db: Path) -> None:
    """Requests sent before a run that cannot work stops, and the memory of a flood reply."""
    import subprocess

    from calibration.errors import EndpointRejected
    from tests.judge_stub import StubServer

    template = judge.load_template(judge.DEFAULT_TEMPLATE)
    cases = (("405", "an endpoint answering HTTP 405"), ("prose", "a model that never replies in JSON"))
    for kind, what in cases:
        with StubServer(default=kind) as stub:
            config = judge.JudgeConfig(
                base_url=stub.base_url, model=f"waste-{kind}", concurrency=4, timeout=10, api_key_env=""
            )
            try:
                judge.run_lab(config, template, scope="all", db_path=db)
                outcome = "did not stop"
            except EndpointRejected:
                outcome = "stopped"
            print(
                f"  {what}: {outcome} after {stub.count} requests (concurrency 4, "
                f"{db_answers(db)} answers in scope)"
            )
    with tempfile.TemporaryDirectory() as tmp:
        small = make_db(Path(tmp), 1)
        with StubServer(default=("huge", 50), record=False) as stub:
            out = subprocess.run(
                [sys.executable, "-c", PEAK_CHILD, str(small), stub.base_url],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split(maxsplit=2)
        print(
            f"  a 50 MB reply: peak RSS {out[0]} MB for the whole run (imports included); {out[1]} answer "
            f"failed: {out[2].strip()}"
        )


def db_answers(db: Path) -> int:
    with store.session(db) as conn:
        return judge.plan_run(conn, "x", "y", "all").answers


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        status = main()
    raise SystemExit(status)
