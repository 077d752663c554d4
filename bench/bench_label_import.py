"""How long a reviewer's verdict waits while a large label file is imported.

    python bench/bench_label_import.py [--labels 120000] [--before CHECKOUT]

A database of judged answers (three claims each, one label per claim in the file) is built,
then `import-labels` runs in its own process while this one writes a verdict through
`store.record_label` every 50 ms, each in a fresh connection as the review page does, and times
each write from its start to its commit. Printed: the import's wall time, how many verdicts were
written meanwhile, how many were refused (the busy timeout, 30 s, ran out), and their median
and maximum wait. `--before` names another checkout of this
project (e.g. `git worktree add /tmp/before <commit>`): the same measurement runs with its code
too, each in a process of its own that imports only that checkout, for a before/after table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_PER_ANSWER = 3
VERDICTS = ("SUPPORTED", "CONTRADICTED", "UNSUPPORTED")


def make_files(folder: Path, n_labels: int) -> tuple[Path, Path]:
    answers, labels = folder / "answers.jsonl", folder / "labels.csv"
    n_answers = n_labels // CLAIMS_PER_ANSWER
    with answers.open("w", encoding="utf-8") as fh:
        for a in range(n_answers + 1):  # the extra answer holds the concurrent reviewer's claim
            fh.write(
                json.dumps(
                    {
                        "id": f"a{a}",
                        "question": f"Question {a}?",
                        "answer": f"Answer {a}.",
                        "judge_model": "bench",
                        "judge_prompt_version": "v1",
                        "chunks": [{"id": "k1", "text": f"chunk {a}"}],
                        "claims": [
                            {"id": f"c{c}", "claim": f"Claim {c} of {a}.", "verdict": "SUPPORTED"}
                            for c in range(CLAIMS_PER_ANSWER)
                        ],
                    }
                )
                + "\n"
            )
    with labels.open("w", encoding="utf-8") as fh:
        fh.write("answer_id,claim_id,verdict,reviewer\n")
        for a in range(n_answers):
            for c in range(CLAIMS_PER_ANSWER):
                fh.write(f"a{a},c{c},{VERDICTS[(a + c) % 3]},bench\n")
    return answers, labels


def worker(answers: Path, labels: Path, db_path: Path) -> dict[str, float]:
    """One measurement, with the `calibration` of the checkout under test (see `measure`)."""
    from calibration import store
    from calibration.errors import DatabaseBusyError
    from calibration.importing import import_answers

    with store.session(db_path) as db:
        import_answers(db, answers)
        claim = store.claim_pk(db, f"a{_last_answer(answers)}", "c0")  # not in the label file
    checkout = Path(store.__file__).resolve().parents[2]
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "calibration", "--db", str(db_path), "import-labels", str(labels)],
        cwd=checkout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    waits: list[float] = []
    refused = 0
    while proc.poll() is None:
        t0 = time.perf_counter()
        try:
            with store.session(db_path) as db:
                store.record_label(
                    db, claim=claim, reviewer="rita", kind="blind", verdict=VERDICTS[len(waits) % 2]
                )
        except DatabaseBusyError:  # waited the whole busy timeout
            refused += 1
        waits.append(time.perf_counter() - t0)
        time.sleep(0.05)
    _out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(err)
    return {
        "import_s": time.perf_counter() - started,
        "verdicts": len(waits),
        "refused": refused,
        "median_ms": statistics.median(waits) * 1000,
        "max_ms": max(waits) * 1000,
    }


def _last_answer(answers: Path) -> int:
    with answers.open(encoding="utf-8") as fh:
        return sum(1 for _ in fh) - 1


def measure(checkout: Path, answers: Path, labels: Path, db_path: Path) -> dict[str, float]:
    """`worker` in a process whose `calibration` is the one of `checkout`."""
    out = subprocess.run(
        [sys.executable, __file__, "--worker", str(answers), str(labels), str(db_path)],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labels", type=int, default=120_000)
    ap.add_argument("--before", type=Path, help="another checkout to measure the same way")
    ap.add_argument("--worker", nargs=3, type=Path, metavar=("ANSWERS", "LABELS", "DB"))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return
    runs = ([("before", args.before.resolve())] if args.before else []) + [("this checkout", ROOT)]
    print(
        f"{'code':<14} {'labels':>8} {'import s':>9} {'verdicts':>9} {'refused':>8} "
        f"{'median wait ms':>15} {'max wait ms':>12}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        answers, labels = make_files(Path(tmp), args.labels)
        for name, checkout in runs:
            r = measure(checkout, answers, labels, Path(tmp) / f"{name.replace(' ', '_')}.db")
            print(
                f"{name:<14} {args.labels:>8} {r['import_s']:>9.1f} {r['verdicts']:>9.0f} "
                f"{r['refused']:>8.0f} {r['median_ms']:>15.0f} {r['max_ms']:>12.0f}"
            )


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
