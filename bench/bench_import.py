"""Import throughput and peak memory, next to a raw sqlite-utils insert_all of the same rows.

    python bench/bench_import.py [--claims 100000] [--also 1000000] [--big-record-mb 40]
                                 [--parquet-text-mb 400]

Each measurement runs in its own process so its peak RSS is its own. CPU seconds (user +
system, of that process) sit beside wall seconds: on a busy machine the wall clock measures
the neighbours too, CPU time much less so. The baseline
parses the same JSONL and calls sqlite-utils `insert_all` with no validation, no
alias mapping and no conflict checks: the floor the importer's extra work sits on.

Two more cases, each beside its baseline measured in the same run: one record of
`--big-record-mb` MB in a JSON array next to the same record as a JSONL line (a record larger
than the read buffer must not cost more than the line does), and a small Parquet file whose
highly compressible text decodes to `--parquet-text-mb` MB next to a Parquet file of the same
shape with little text (peak memory must stay far below the decoded text: it is read in batches).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLAIMS_PER_ANSWER = 5
VERDICTS = ("SUPPORTED", "supported", "UNSUPPORTED", "contradicted", "not enough info")


def make_file(path: Path, n_claims: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for a in range(n_claims // CLAIMS_PER_ANSWER):
            rec = {
                "id": f"a{a:07d}",
                "question": f"Какой срок поставки по договору {a}?",
                "answer": " ".join(f"Утверждение {a}-{c}." for c in range(CLAIMS_PER_ANSWER)),
                "chunks": [
                    {"id": f"S{k}", "text": f"Фрагмент {k} документа {a}. " * 8, "source": f"doc{a % 97}.md"}
                    for k in range(3)
                ],
                "claims": [
                    {
                        "id": f"c{c}",
                        "claim": f"Утверждение {a}-{c}.",
                        "verdict": VERDICTS[(a + c) % len(VERDICTS)],
                        "rationale": "См. фрагмент S1.",
                        "evidence": ["S1"],
                    }
                    for c in range(CLAIMS_PER_ANSWER)
                ],
                "judge_model": "bench-judge",
                "judge_prompt_version": "v1",
                "category": f"k{a % 7}",
            }
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def worker_import(src: Path, db_path: Path) -> dict:
    from calibration import store
    from calibration.importing import import_answers

    with store.session(db_path) as db:
        t0, c0 = time.perf_counter(), cpu_seconds()
        rep = import_answers(db, src)
        dt, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    return {"seconds": dt, "cpu": cpu, "claims": rep.claims_new}


def worker_baseline(src: Path, db_path: Path) -> dict:
    from sqlite_utils import Database

    db = Database(db_path)
    db.execute("PRAGMA journal_mode = WAL")
    t0, c0 = time.perf_counter(), cpu_seconds()

    def rows():
        with src.open(encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)

    answers, chunks, claims, verdicts = [], [], [], []
    n = 0

    def flush() -> None:
        db["answers"].insert_all(answers)
        db["chunks"].insert_all(chunks)
        db["claims"].insert_all(claims)
        db["verdicts"].insert_all(verdicts)
        answers.clear(), chunks.clear(), claims.clear(), verdicts.clear()

    with db.atomic():
        for rec in rows():
            answers.append(
                {
                    "id": rec["id"],
                    "question": rec["question"],
                    "answer": rec["answer"],
                    "category": rec["category"],
                }
            )
            chunks += [{"answer_id": rec["id"], **c} for c in rec["chunks"]]
            for c in rec["claims"]:
                n += 1
                claims.append({"answer_id": rec["id"], "claim_id": c["id"], "text": c["claim"]})
                verdicts.append(
                    {
                        "answer_id": rec["id"],
                        "claim_id": c["id"],
                        "verdict": c["verdict"],
                        "rationale": c["rationale"],
                    }
                )
            if len(claims) >= 5000:
                flush()
        flush()
    dt, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    return {"seconds": dt, "cpu": cpu, "claims": n}


def make_big_record(jsonl: Path, array: Path, megabytes: int) -> None:
    rec = {
        "id": "big",
        "question": "q?",
        "answer": "Длинный ответ. " * (megabytes * 2**20 // 28),
        "chunks": [{"id": "S1", "text": "Фрагмент."}],
        "judge_model": "bench-judge",
        "judge_prompt_version": "v1",
        "claims": [{"id": "c1", "claim": "Длинный ответ.", "verdict": "SUPPORTED"}],
    }
    line = json.dumps(rec, ensure_ascii=False)
    jsonl.write_text(line + "\n", encoding="utf-8")
    array.write_text("[\n" + line + "\n]\n", encoding="utf-8")


PARQUET_ANSWERS, PARQUET_CLAIMS = 800, 5


def make_parquet(path: Path, text_mb: int) -> None:
    """Rows of PARQUET_ANSWERS answers whose answer text repeats in each of its claim rows."""
    import pandas as pd

    rows = PARQUET_ANSWERS * PARQUET_CLAIMS
    size = max(1, text_mb * 2**20 // rows)
    pattern = "The delivery term is ten days from the signed order. "
    pd.DataFrame(
        {
            "answer_id": [f"a{a}" for a in range(PARQUET_ANSWERS) for _ in range(PARQUET_CLAIMS)],
            "question": ["When is delivery?"] * rows,
            "answer": [
                (f"{a} " + pattern * (size // len(pattern) + 1))[:size]
                for a in range(PARQUET_ANSWERS)
                for _ in range(PARQUET_CLAIMS)
            ],
            "claim": [f"Claim {c} of {a}." for a in range(PARQUET_ANSWERS) for c in range(PARQUET_CLAIMS)],
            "verdict": ["SUPPORTED"] * rows,
        }
    ).to_parquet(path, compression="zstd")


def worker_read(src: Path, db_path: Path) -> dict:
    """Only the file's reading: the full import of one huge answer is dominated by its answer
    checks (seed 003), the same whichever way the file holds it."""
    from calibration.reading import iter_json_records

    t0, c0 = time.perf_counter(), cpu_seconds()
    n = sum(1 for _ in iter_json_records(src))
    return {"seconds": time.perf_counter() - t0, "cpu": cpu_seconds() - c0, "claims": n}


def worker_parquet(src: Path, db_path: Path) -> dict:
    from calibration import adapters, store

    with store.session(db_path) as db:
        t0, c0 = time.perf_counter(), cpu_seconds()
        rep, _ = adapters.import_file(
            db, "parquet", src, judge_model="bench-judge", judge_prompt_version="v1"
        )
        dt, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    return {"seconds": dt, "cpu": cpu, "claims": rep.claims_new}


def run_worker(kind: str, src: Path, db_path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", kind, str(src), str(db_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--claims", type=int, default=100_000)
    ap.add_argument("--also", type=int, default=0, help="a second, larger size to show memory stays flat")
    ap.add_argument("--big-record-mb", type=int, default=40, help="one record this large (0: skip)")
    ap.add_argument(
        "--parquet-text-mb",
        type=int,
        default=400,
        help="decoded text of the compressible Parquet file (0: skip)",
    )
    ap.add_argument("--worker", nargs=3, metavar=("KIND", "SRC", "DB"))
    args = ap.parse_args()
    if args.worker:
        kind, src, db_path = args.worker
        workers = {"import": worker_import, "read": worker_read, "parquet": worker_parquet}
        fn = workers.get(kind, worker_baseline)
        result = fn(Path(src), Path(db_path))
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return
    sizes = [args.claims] + ([args.also] if args.also else [])
    print(f"{'claims':>9}  {'what':<30} {'seconds':>8} {'CPU s':>7} {'claims/s':>10} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            src = Path(tmp) / f"judged_{n}.jsonl"
            make_file(src, n)
            size_mb = src.stat().st_size / 2**20
            for kind, label in (
                ("baseline", "sqlite-utils insert_all (raw)"),
                ("import", "calibration import"),
            ):
                r = run_worker(kind, src, Path(tmp) / f"{kind}_{n}.db")
                print(
                    f"{r['claims']:>9}  {label:<30} {r['seconds']:>8.2f} {r['cpu']:>7.2f} "
                    f"{r['claims'] / r['seconds']:>10,.0f} {r['peak_rss_mb']:>12.0f}"
                )
            print(f"{'':>9}  (input file {size_mb:.0f} MB)")
        if args.big_record_mb:
            jsonl, array = Path(tmp) / "big.jsonl", Path(tmp) / "big.json"
            make_big_record(jsonl, array, args.big_record_mb)
            print(f"\none record of {jsonl.stat().st_size / 2**20:.0f} MB, read and checked (no import)")
            for src, label in ((jsonl, "as a JSONL line"), (array, "in a JSON array")):
                r = run_worker("read", src, Path(tmp) / f"{src.suffix[1:]}_big.db")
                print(
                    f"{'':>9}  {label:<30} {r['seconds']:>8.2f} {r['cpu']:>7.2f} {'':>10} "
                    f"{r['peak_rss_mb']:>12.0f}"
                )
        if args.parquet_text_mb:
            print(f"\nParquet, {PARQUET_ANSWERS * PARQUET_CLAIMS} claim rows")
            for mb, label in ((1, "little text"), (args.parquet_text_mb, "compressible text")):
                src = Path(tmp) / f"text_{mb}.parquet"
                make_parquet(src, mb)
                r = run_worker("parquet", src, Path(tmp) / f"parquet_{mb}.db")
                what = f"{label}: {src.stat().st_size / 2**20:.1f} MB file, {mb} MB text"
                print(
                    f"{r['claims']:>9}  {what:<30} {r['seconds']:>8.2f} {r['cpu']:>7.2f} "
                    f"{r['claims'] / r['seconds']:>10,.0f} {r['peak_rss_mb']:>12.0f}"
                )


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
