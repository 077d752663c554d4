"""Time of the dashboard on 100k labeled claims: the domain function the page calls, and the page.

    python bench/bench_dashboard.py [--claims 100000] [--answers 20000] [--db PATH] [--rebuild]

Builds (once; reused while --db exists) a database of `answers` answers with `claims` claims in
all, judged by two runs, every claim labeled (a fifth of the answers by two reviewers, with
reconciles, slips and adjudications), and six 30-answer cycles of the first run, five closed.
Judged answers go through the real import; labels are written with SQL in bulk, since 100k
`record_label` calls would time the label writer, not the dashboard.

Then prints: the store read behind the statistics (`store.stats_columns`); `dashboard.build`
for every labeled claim of a run (with and without the paired comparison) and for one cycle;
the fingerprint the page's cache is keyed on; the page itself through streamlit's AppTest with
a cold cache (the first visit after any label write), warm, and with a comparison (cold again),
three times each; and the JSONL export of all claims. The machine's load average is printed
before and after: on a shared machine the figures move with it. Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import cycles, dashboard, export, store  # noqa: E402
from calibration.importing import import_answers  # noqa: E402

LABELS = ("SUPPORTED", "CONTRADICTED", "UNSUPPORTED")
CATEGORIES = (
    "single-fact",
    "multi-part",
    "rule-application",
    "exception",
    "refusal",
    "numeric",
    "comparison",
    "procedure",
)
RUN_A, RUN_B = "bench-judge@v1", "bench-judge@v2"
DONE = "bench.complete"


def _judge(rng: random.Random, human: str, error: float) -> str:
    if rng.random() >= error:
        return human
    # A lenient slant: most wrong calls say SUPPORTED.
    return "SUPPORTED" if human != "SUPPORTED" and rng.random() < 0.7 else rng.choice(LABELS)


def build(path: Path, n_claims: int, n_answers: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    sizes = [1] * n_answers
    for _ in range(n_claims - n_answers):
        sizes[rng.randrange(n_answers)] += 1
    humans: list[list[str]] = [[rng.choices(LABELS, (0.6, 0.1, 0.3))[0] for _ in range(k)] for k in sizes]
    tmp = Path(tempfile.mkdtemp(prefix="bench_dash_"))
    filler = "Поставка осуществляется в течение десяти рабочих дней после оплаты счёта. " * 3
    for run, error in ((RUN_A, 0.08), (RUN_B, 0.12)):
        model, version = run.split("@")
        src = tmp / f"{version}.jsonl"
        with src.open("w", encoding="utf-8") as fh:
            for a, labels in enumerate(humans):
                fh.write(
                    json.dumps(
                        {
                            "id": f"a{a:06d}",
                            "question": f"Вопрос {a}?",
                            "answer": f"Ответ {a}.",
                            "category": CATEGORIES[a % len(CATEGORIES)],
                            "judge_model": model,
                            "judge_prompt_version": version,
                            "chunks": [
                                {"id": f"S{i}", "text": f"{filler} ({a}/{i})", "source": f"doc{a % 97}/S{i}"}
                                for i in range(1, 4)
                            ],
                            "claims": [
                                {
                                    "id": f"c{i}",
                                    "claim": f"Утверждение {i} ответа {a}.",
                                    "verdict": _judge(rng, h, error),
                                    "rationale": "S1 says so.",
                                    "evidence": ["S1"],
                                }
                                for i, h in enumerate(labels, start=1)
                            ],
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
        with store.session(path) as db:
            t0 = time.perf_counter()
            import_answers(db, src)
            print(f"  import {run}: {time.perf_counter() - t0:.1f} s")
    with store.session(path) as db:
        t0 = time.perf_counter()
        run_a = store.find_judge_run(db, RUN_A).id
        judge = dict(
            db.execute(
                "SELECT claim_pk, verdict FROM judge_verdicts WHERE run_id = :run_id", {"run_id": run_a}
            )
        )
        claims = db.execute("SELECT id, answer_id, position FROM claims ORDER BY id").fetchall()
        ts = store.now()
        events, labels, adjudications = [], [], []
        for pk, aid, pos in claims:
            a = int(aid[1:])
            truth = humans[a][pos]
            reviewers = [f"r{a % 5}"] + ([f"r{(a + 1) % 5}"] if a % 5 == 0 else [])
            for n, rev in enumerate(reviewers):
                # The second reviewer disagrees now and then; half of those get adjudicated.
                final = truth if n == 0 or rng.random() > 0.1 else rng.choice(LABELS)
                blind, reconciled, slip = final, None, 0
                if final != judge[pk]:
                    if rng.random() < 0.15:  # a slip: blind differed, the reviewer adopted the judge
                        blind, final, reconciled, slip = final, judge[pk], "judge_right", 1
                    else:
                        reconciled = "keep"
                events.append((pk, rev, "blind", blind, '["S1"]', None, None, None, ts))
                if reconciled:
                    events.append((pk, rev, reconciled, final, '["S1"]', None, None, run_a, ts))
                labels.append(
                    (
                        pk,
                        rev,
                        "labeled",
                        blind,
                        final,
                        reconciled,
                        slip,
                        '["S1"]',
                        "note" if rng.random() < 0.05 else None,
                        ts,
                        ts,
                        ts,
                    )
                )
                if n == 1 and final != truth and rng.random() < 0.5:
                    adjudications.append((pk, truth, "lead", None, ts))
                    events.append((pk, "lead", "adjudicate", truth, "[]", None, None, None, ts))
        with store.write(db):
            db.conn.executemany(
                "INSERT INTO label_events (claim_pk, reviewer, kind, verdict, evidence, note, cycle_id, "
                "judge_run_id, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
                events,
            )
            db.conn.executemany(
                "INSERT INTO human_labels (claim_pk, reviewer, status, blind_verdict, final_verdict, "
                "reconciled, slip, evidence, note, blind_at, final_at, updated_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                labels,
            )
            db.conn.executemany(
                "INSERT INTO adjudications (claim_pk, verdict, adjudicator, note, "
                "created_at) VALUES (?,?,?,?,?)",
                adjudications,
            )
        print(
            f"  labels: {len(labels):,} labels, {len(events):,} events, {len(adjudications):,} "
            f"adjudications in {time.perf_counter() - t0:.1f} s"
        )
        t0 = time.perf_counter()
        for i in range(6):
            cyc = cycles.create_cycle(
                db,
                name=f"week {i + 1}",
                judge_run=RUN_A,
                size=30,
                seed=i,
                strategy="failures-first" if i % 2 else "random",
                include_labeled=True,
            )
            if i < 5:
                cycles.close_cycle(db, cyc.name, force=True)
        print(f"  cycles: 6 created, 5 closed in {time.perf_counter() - t0:.1f} s")
    (path.parent / f"{path.name}.{DONE}").touch()


def timed(label: str, fn, repeat: int = 3):  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    print(f"  {label:<52} median {sorted(times)[len(times) // 2]:6.3f} s  (min {min(times):.3f})")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claims", type=int, default=100_000)
    ap.add_argument("--answers", type=int, default=20_000)
    ap.add_argument("--db", type=Path, default=None)
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    path = args.db or Path(tempfile.gettempdir()) / f"bench_dashboard_{args.claims}_{args.answers}.db"
    marker = path.parent / f"{path.name}.{DONE}"
    if args.rebuild or not marker.exists():
        for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"), marker):
            p.unlink(missing_ok=True)
        print(f"building {path}")
        build(path, args.claims, args.answers)
    os.environ["CALIBRATION_DB"] = str(path)

    print(f"load average {_load()}")
    with store.session(path) as db:
        n = db.execute("SELECT count(*) FROM claims").fetchone()[0]
        labeled = db.execute("SELECT count(DISTINCT claim_pk) FROM human_labels").fetchone()[0]
        print(f"database {path}: {n:,} claims, {labeled:,} labeled, runs {RUN_A} and {RUN_B}")
        timed("fingerprint (cache key, every rerun)", lambda: dashboard.fingerprint(db))
        run_a = store.find_judge_run(db, RUN_A).id
        timed("store.stats_columns: the run's claims and labels", lambda: store.stats_columns(db, run_a))
        d = timed("build: every labeled claim of the run", lambda: dashboard.build(db, run=RUN_A))
        timed("build: same, bootstrap skipped", lambda: dashboard.build(db, run=RUN_A, bootstrap=0))
        timed(
            "build: + paired comparison with the second run",
            lambda: dashboard.build(db, run=RUN_A, compare_with=RUN_B),
        )
        c = timed(
            "build: one cycle (failures-first, weighted)",
            lambda: dashboard.build(db, run=RUN_A, cycle="week 2", compare_with=RUN_B),
        )
        print(
            f"  -> {d.report.agreement_bootstrap.resamples:,} answer-bootstrap resamples over "
            f"{d.report.n_answers:,} answers; "
            f"flag {d.report.flag.status} ({', '.join(r.code for r in d.reasons)}); "
            f"agreement {d.report.agreement.value:.3f}, kappa {d.report.kappa.value:.3f}; "
            f"{len(d.report.disagreeing_claims):,} disagreeing, {len(d.details)} with detail; "
            f"{len(d.trend)} closed cycles; cycle scope {c.report.n_claims} claims, "
            f"oversampled {c.oversampled}"
        )

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    # The first AppTest run also pays for importing streamlit, pandas, altair and scipy.
    _signed_in(AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)).run()
    at = _signed_in(AppTest.from_file(str(ROOT / "app.py"), default_timeout=120))

    def rerun(cold: bool) -> float:
        if cold:  # what the first visit after a label write pays: the fingerprint moved
            st.cache_resource.clear()
        t0 = time.perf_counter()
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return time.perf_counter() - t0

    def show(label: str, times: list[float]) -> None:
        print(f"  {label:<52} median {sorted(times)[len(times) // 2]:6.3f} s  (min {min(times):.3f})")

    show("page (AppTest), default run, cached from previous", [rerun(cold=False)])
    at.selectbox(key="dash_run").set_value(RUN_A)
    show("page (AppTest), switch run: cold cache for it", [rerun(cold=True) for _ in range(3)])
    show("page (AppTest), rerun: warm cache", [rerun(cold=False) for _ in range(3)])
    at.selectbox(key=f"dash_compare_{RUN_A}").set_value(1)  # the other run
    show("page (AppTest), + comparison: cold cache", [rerun(cold=True) for _ in range(3)])
    notes = [t.value for t in at.text if "resamples" in t.value]
    print(f"  -> the page says: {notes[0] if notes else 'no resample count shown'}")

    out = Path(tempfile.gettempdir()) / "bench_dashboard_export.jsonl"
    with store.session(path) as db:
        rep = timed("export: lossless JSONL of every claim", lambda: export.export(db, out), repeat=1)
    print(f"  -> {rep.rows:,} lines, {out.stat().st_size / 1e6:.0f} MB")
    print(f"  peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(f"load average {_load()}")


def _signed_in(at):  # type: ignore[no-untyped-def]
    """The Dashboard through the app's navigation (as a served app runs it), signed in: without OIDC or
    a lead list any signed-in name is a lead."""
    from calibration_app import signin

    at.session_state[signin.REVIEWER_KEY] = "bench"
    return at.switch_page("pages/dashboard.py")


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min) on {os.cpu_count()} CPUs"


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
