"""How long a reviewer's verdict waits while a large file of judged answers is imported.

    python bench/bench_import_lock.py [--answers 30000] [--budget 1.0]

`import` runs in its own process on a file of `--answers` judged answers (three claims each,
about 60 MB at the default) while this one writes a verdict through `store.record_label`
every 50 ms, each in a fresh connection as the review page does, and times each write from its
start to its commit. Printed: the file's size, the import's wall time, how many verdicts were
written meanwhile, and their median and maximum wait; the exit status is 1 when the slowest
wait is over `--budget` seconds (the figure the review page promises: a verdict lands within a
second while an import runs). tests/test_security_import_lock.py checks the ordering (a verdict
commits while the import is moving in); this script measures the time, which depends on the
machine and on its neighbours.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import store  # noqa: E402
from calibration.importing import import_answers  # noqa: E402


def write_answers(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(
                json.dumps(
                    {
                        "id": f"big{i}",
                        "question": f"Question {i}? " * 5,
                        "answer": f"Answer {i}. " * 20,
                        "judge_model": "bulk",
                        "judge_prompt_version": "v1",
                        "metadata": {"i": i},
                        "chunks": [{"id": "k1", "text": f"chunk {i} " * 30}],
                        "claims": [
                            {"id": f"c{j}", "claim": f"Claim {j} of {i}.", "verdict": "SUPPORTED"}
                            for j in range(3)
                        ],
                    }
                )
                + "\n"
            )
    return path


def measure(folder: Path, n_answers: int) -> dict[str, float]:
    db_path = folder / "bench.db"
    with store.session(db_path) as db:
        import_answers(db, write_answers(folder / "small.jsonl", 1))
        claim = store.claim_pk(db, "big0", "c0")
    big = write_answers(folder / "big.jsonl", n_answers)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "calibration", "--db", str(db_path), "import", str(big)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    waits: list[float] = []
    while proc.poll() is None:
        t0 = time.perf_counter()
        with store.session(db_path) as db:
            store.record_label(
                db,
                claim=claim,
                reviewer="rita",
                kind="blind",
                verdict=("SUPPORTED", "CONTRADICTED")[len(waits) % 2],
            )
        waits.append(time.perf_counter() - t0)
        time.sleep(0.05)  # a reviewer's pace, not a wait for anything
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"the import failed:\n{err}")
    return {
        "size_mb": big.stat().st_size / 1e6,
        "import_s": time.perf_counter() - started,
        "verdicts": len(waits),
        "median_ms": statistics.median(waits) * 1000 if waits else 0.0,
        "max_ms": max(waits) * 1000 if waits else 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=30_000)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds the slowest verdict may wait")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        r = measure(Path(tmp), args.answers)
    print(
        f"import of {r['size_mb']:.0f} MB took {r['import_s']:.1f} s; {r['verdicts']:.0f} verdicts "
        f"written meanwhile, median wait {r['median_ms']:.0f} ms, slowest {r['max_ms']:.0f} ms "
        f"(budget {args.budget * 1000:.0f} ms)"
    )
    return 0 if r["max_ms"] <= args.budget * 1000 else 1


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        status = main()
    raise SystemExit(status)
