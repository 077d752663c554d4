"""Time of the full agreement report on 100k labelled claims with 2,000 answer-bootstrap resamples.

    python bench/bench_stats.py [--claims 100000] [--answers 20000] [--resamples 2000] [--repeat 3]
                                [--no-db]

Synthetic data: answers of about claims/answers claims each, a human class mix of 60/10/30,
and a judge whose error rate varies from answer to answer (so claims of one answer are
correlated, as the cluster bootstrap assumes).  Two measurements:

1. the pure report (`report.agreement_report`) on in-memory columns;
2. the whole `python -m calibration stats` command, as a new process, on a database holding
   the same claims (imported with the project's own importers, which is not timed here:
   bench_import.py measures that).

Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration.agreement import LABELS  # noqa: E402
from calibration.importing import import_answers, import_labels  # noqa: E402
from calibration.report import agreement_report  # noqa: E402
from calibration.store import session  # noqa: E402


@dataclass(frozen=True)
class Claims:
    """The report's input columns: answer, human and judge verdict (LABELS indices), key per claim."""

    answer: np.ndarray
    human: np.ndarray
    judge: np.ndarray
    keys: list[str]


def make_claims(n_claims: int, n_answers: int, seed: int = 0) -> Claims:
    rng = np.random.default_rng(seed)
    # Sizes around the requested mean, then trimmed or padded to hit n_claims exactly.
    sizes = np.clip(rng.poisson(n_claims / n_answers, size=n_answers), 1, None)
    while sizes.sum() != n_claims:
        diff = n_claims - int(sizes.sum())
        idx = rng.integers(0, n_answers, size=abs(diff))
        np.add.at(sizes, idx, 1 if diff > 0 else -1)
        sizes = np.clip(sizes, 1, None)
    answer = np.repeat(np.arange(n_answers), sizes)
    human = rng.choice(3, size=n_claims, p=[0.6, 0.1, 0.3])
    error_rate = rng.beta(2, 12, size=n_answers)[answer]
    wrong = rng.random(n_claims) < error_rate
    # A lenient slant: most wrong calls say SUPPORTED.
    wrong_call = np.where(rng.random(n_claims) < 0.6, 0, rng.integers(0, 3, size=n_claims))
    judge = np.where(wrong, wrong_call, human)
    return Claims(answer, human, judge, [f"ans{a:06d}-c{i}" for i, a in enumerate(answer.tolist())])


def write_db(claims: Claims, db_path: Path, tmp: Path) -> None:
    """Store the claims as one judge run plus one reviewer's labels, through the importers."""
    answers: dict[str, list[tuple[str, str, str]]] = {}
    for a, key, h, j in zip(
        claims.answer.tolist(), claims.keys, claims.human.tolist(), claims.judge.tolist(), strict=True
    ):
        answers.setdefault(f"ans{a:06d}", []).append((key, LABELS[h], LABELS[j]))
    judged, labels = tmp / "judged.jsonl", tmp / "labels.csv"
    with judged.open("w", encoding="utf-8") as fh:
        for aid, rows in answers.items():
            fh.write(
                json.dumps(
                    {
                        "id": aid,
                        "question": f"question {aid}",
                        "answer": f"answer {aid}",
                        "chunks": [{"id": "c1", "text": f"chunk of {aid}"}],
                        "claims": [
                            {"id": key, "claim": f"claim {key}", "verdict": judge} for key, _, judge in rows
                        ],
                        "judge_model": "bench-judge",
                        "judge_prompt_version": "v1",
                    }
                )
                + "\n"
            )
    with labels.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["answer_id", "claim_id", "verdict", "reviewer"])
        w.writerows(
            [aid, key, human, "bench-reviewer"] for aid, rows in answers.items() for key, human, _ in rows
        )
    with session(db_path) as db:
        import_answers(db, judged)
        import_labels(db, labels)


def time_cli(db_path: Path, resamples: int, repeat: int) -> list[float]:
    cmd = [
        sys.executable,
        "-m",
        "calibration",
        "--db",
        str(db_path),
        "stats",
        "--json",
        "--bootstrap",
        str(resamples),
    ]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = subprocess.run(
            cmd,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        times.append(time.perf_counter() - t0)
    d = json.loads(out.stdout)
    print(
        f"  stats --json: n_claims {d['n_claims']:,}, n_answers {d['n_answers']:,}, "
        f"flag {d['flag']['status']}"
    )
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claims", type=int, default=100_000)
    ap.add_argument("--answers", type=int, default=20_000)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-db", action="store_true", help="skip the end-to-end CLI measurement")
    args = ap.parse_args()

    t0 = time.perf_counter()
    claims = make_claims(args.claims, args.answers)
    columns = (claims.human, claims.judge, claims.answer, claims.keys)
    t_build = time.perf_counter() - t0

    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        report = agreement_report(*columns, bootstrap=args.resamples, seed=0)
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    agreement_report(*columns, bootstrap=0)
    t_no_boot = time.perf_counter() - t0
    t0 = time.perf_counter()
    text = report.to_text("bench@synthetic")
    report.to_dict("bench@synthetic")
    t_render = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    d = report.to_dict()
    print(
        f"claims {report.n_claims:,} in {report.n_answers:,} answers; "
        f"{args.resamples:,} answer-bootstrap resamples; {args.repeat} runs"
    )
    print(f"  build synthetic claims        {t_build:7.3f} s")
    print(
        f"  full report, median           {sorted(times)[len(times) // 2]:7.3f} s  "
        f"(min {min(times):.3f}, max {max(times):.3f})"
    )
    print(f"  report without bootstrap      {t_no_boot:7.3f} s")
    print(f"  text + JSON rendering         {t_render:7.3f} s")
    print(f"  peak RSS of this process      {peak_mb:7.0f} MB")
    print(
        f"  agreement {d['agreement']['value']:.4f}, kappa {d['kappa']['value']:.4f} "
        f"(analytic {d['kappa']['ci_low']:.4f}–{d['kappa']['ci_high']:.4f}, "
        f"bootstrap {d['kappa_bootstrap']['ci_low']:.4f}–{d['kappa_bootstrap']['ci_high']:.4f}), "
        f"flag {d['flag']['status']}"
    )
    print(f"  text report: {len(text.splitlines())} lines")

    if args.no_db:
        return
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "bench.db"
        t0 = time.perf_counter()
        write_db(claims, db_path, Path(tmp))
        t_import = time.perf_counter() - t0
        print(
            f"end to end: python -m calibration stats --json on a {db_path.stat().st_size / 1e6:.0f} MB "
            f"database (import took {t_import:.1f} s, not part of the figure)"
        )
        cli = time_cli(db_path, args.resamples, args.repeat)
        print(
            f"  whole command, median         {sorted(cli)[len(cli) // 2]:7.3f} s  "
            f"(min {min(cli):.3f}, max {max(cli):.3f}; includes interpreter start and imports)"
        )


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
