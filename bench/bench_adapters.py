"""Adapter throughput, end to end into SQLite, beside the native JSONL import of the same claims.

    python bench/bench_adapters.py [--claims 100000] [--repeat 1]

The same answers (5 claims and 3 chunks each) are written once in every shape: this tool's
JSONL, a DeepEval results-folder test run, a Ragas trace, a RefChecker output file, a
claim-per-row CSV, TSV with repeated chunk columns, and Parquet. Each is imported into a
fresh database; the time runs from opening the file to the committed transaction. Target:
every adapter at least 50% of the native import's claims per second.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLAIMS_PER_ANSWER = 5
CHUNKS_PER_ANSWER = 3
DEEPEVAL_VERDICTS = ("yes", "no", "idk")
CANON = {"yes": "SUPPORTED", "no": "CONTRADICTED", "idk": "UNSUPPORTED"}


def answers(n_claims: int) -> list[dict[str, Any]]:
    out = []
    for a in range(n_claims // CLAIMS_PER_ANSWER):
        claims = [
            {
                "text": f"Утверждение {a}-{c}: срок поставки {c + 3} дней.",
                "verdict": DEEPEVAL_VERDICTS[(a + c) % 3],
                "reason": f"См. фрагмент {c % 3 + 1}.",
            }
            for c in range(CLAIMS_PER_ANSWER)
        ]
        out.append(
            {
                "id": f"a{a:07d}",
                "question": f"Какой срок поставки по договору {a}?",
                "answer": " ".join(c["text"] for c in claims),
                "chunks": [f"Фрагмент {k} документа {a}. " * 8 for k in range(CHUNKS_PER_ANSWER)],
                "claims": claims,
            }
        )
    return out


def _pretty(items: list[Any]) -> str:
    # DeepEval's verbose-log list format (see calibration/adapters/deepeval.py).
    if not items:
        return "[]"
    parts = [
        f'"{x}"' if isinstance(x, str) else json.dumps(x, indent=4).replace("\n", "\n    ") for x in items
    ]
    return "[\n    " + ",\n    ".join(parts) + "\n]"


def write_native(data: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for rec in data:
            fh.write(
                json.dumps(
                    {
                        "id": rec["id"],
                        "question": rec["question"],
                        "answer": rec["answer"],
                        "chunks": rec["chunks"],
                        "claims": [
                            {
                                "id": f"c{i + 1}",
                                "claim": c["text"],
                                "verdict": CANON[c["verdict"]],
                                "rationale": c["reason"],
                            }
                            for i, c in enumerate(rec["claims"])
                        ],
                        "judge_model": "bench-judge",
                        "judge_prompt_version": "v1",
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )


def write_deepeval(data: list[dict[str, Any]], path: Path) -> None:
    cases = []
    for order, rec in enumerate(data):
        logs = " \n \n".join(
            [
                f"Truths (limit=None):\n{_pretty(['truth'])}",
                f"Claims:\n{_pretty([c['text'] for c in rec['claims']])}",
                "Verdicts:\n"
                + _pretty([{"verdict": c["verdict"], "reason": c["reason"]} for c in rec["claims"]]),
            ]
        )
        cases.append(
            {
                "name": rec["id"],
                "input": rec["question"],
                "actualOutput": rec["answer"],
                "retrievalContext": rec["chunks"],
                "success": True,
                "order": order,
                "metricsData": [
                    {
                        "name": "Faithfulness",
                        "threshold": 0.5,
                        "success": True,
                        "score": 0.6,
                        "reason": "...",
                        "strictMode": False,
                        "evaluationModel": "bench-judge",
                        "verboseLogs": logs,
                    }
                ],
            }
        )
    with path.open("w", encoding="utf-8") as fh:
        json.dump({"testFile": "bench.py", "testCases": cases, "testPassed": len(cases), "testFailed": 0}, fh)


def write_ragas(data: list[dict[str, Any]], path: Path) -> None:
    runs: list[dict[str, Any]] = []
    counter = iter(range(10**9))

    def run(
        name: str,
        parent: dict[str, Any] | None,
        inputs: dict[str, Any],
        meta: dict[str, Any],
        outputs: dict[str, Any],
    ) -> dict[str, Any]:
        r = {
            "run_id": f"r{next(counter)}",
            "parent_run_id": parent["run_id"] if parent else None,
            "name": name,
            "inputs": inputs,
            "metadata": meta,
            "outputs": outputs,
            "children": [],
        }
        if parent:
            parent["children"].append(r["run_id"])
        runs.append(r)
        return r

    root = run("ragas evaluation", None, {}, {"type": "evaluation"}, {})
    for i, rec in enumerate(data):
        sample = {
            "user_input": rec["question"],
            "retrieved_contexts": rec["chunks"],
            "response": rec["answer"],
        }
        row = run(f"row {i}", root, sample, {"type": "row", "row_index": i}, {})
        m = run("faithfulness", row, sample, {"type": "metric"}, {"output": 0.6})
        statements = [c["text"] for c in rec["claims"]]
        run(
            "statement_generator_prompt",
            m,
            {"data": {"question": rec["question"], "answer": rec["answer"]}},
            {"type": "ragas_prompt"},
            {"output": [{"statements": statements}]},
        )
        run(
            "n_l_i_statement_prompt",
            m,
            {"data": {"context": "\n".join(rec["chunks"]), "statements": statements}},
            {"type": "ragas_prompt"},
            {
                "output": [
                    {
                        "statements": [
                            {
                                "statement": c["text"],
                                "reason": c["reason"],
                                "verdict": int(c["verdict"] == "yes"),
                            }
                            for c in rec["claims"]
                        ]
                    }
                ]
            },
        )
    with path.open("w", encoding="utf-8") as fh:
        json.dump(runs, fh)


def write_refchecker(data: list[dict[str, Any]], path: Path) -> None:
    label = {"yes": "Entailment", "no": "Contradiction", "idk": "Neutral"}
    items = [
        {
            "id": rec["id"],
            "question": rec["question"],
            "response": rec["answer"],
            "reference": rec["chunks"],
            "claims": [c["text"] for c in rec["claims"]],
            "Y": "Neutral",
            "ys": [[label[c["verdict"]]] + ["Neutral"] * (CHUNKS_PER_ANSWER - 1) for c in rec["claims"]],
        }
        for rec in data
    ]
    with path.open("w", encoding="utf-8") as fh:
        json.dump(items, fh, indent=2)


def table_rows(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "answer_id": rec["id"],
            "question": rec["question"],
            "answer": rec["answer"],
            "chunks": json.dumps(rec["chunks"], ensure_ascii=False),
            "claim": c["text"],
            "verdict": CANON[c["verdict"]],
            "rationale": c["reason"],
        }
        for rec in data
        for c in rec["claims"]
    ]


def write_csv(data: list[dict[str, Any]], path: Path) -> None:
    rows = table_rows(data)
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def write_tsv_repeated(data: list[dict[str, Any]], path: Path) -> None:
    fields = [
        "answer_id",
        "question",
        "answer",
        *(f"chunk_{k + 1}" for k in range(CHUNKS_PER_ANSWER)),
        "claim",
        "verdict",
        "rationale",
    ]
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, delimiter="\t")
        w.writerow(fields)
        for rec in data:
            for c in rec["claims"]:
                w.writerow(
                    [
                        rec["id"],
                        rec["question"],
                        rec["answer"],
                        *rec["chunks"],
                        c["text"],
                        CANON[c["verdict"]],
                        c["reason"],
                    ]
                )


def write_parquet(data: list[dict[str, Any]], path: Path) -> None:
    import pandas as pd

    pd.DataFrame(table_rows(data)).to_parquet(path)


def timed(fn: Callable[[], Any]) -> tuple[tuple[float, float], Any]:
    """((wall seconds, CPU seconds of this process), result)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return (time.perf_counter() - t0, time.process_time() - c0), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claims", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs per format; the best is kept")
    ap.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where files and databases go (e.g. /dev/shm to leave the disk out)",
    )
    args = ap.parse_args()

    from calibration import adapters, store
    from calibration.importing import import_answers

    data = answers(args.claims)
    tmp = Path(tempfile.mkdtemp(prefix="bench-adapters-", dir=args.dir))
    files = {
        "native JSONL": (tmp / "native.jsonl", write_native, None, {}),
        "deepeval": (
            tmp / "test_run_20260101_000000.json",
            write_deepeval,
            "deepeval",
            {"judge_prompt_version": "v1"},
        ),
        "ragas": (
            tmp / "ragas_trace.json",
            write_ragas,
            "ragas",
            {"judge_model": "bench-judge", "judge_prompt_version": "v1"},
        ),
        "refchecker": (
            tmp / "refchecker.json",
            write_refchecker,
            "refchecker",
            {"judge_model": "bench-judge", "judge_prompt_version": "v1"},
        ),
        "csv (JSON chunks)": (
            tmp / "claims.csv",
            write_csv,
            "csv",
            {"judge_model": "bench-judge", "judge_prompt_version": "v1"},
        ),
        "tsv (chunk_1..k)": (
            tmp / "claims.tsv",
            write_tsv_repeated,
            "tsv",
            {"judge_model": "bench-judge", "judge_prompt_version": "v1"},
        ),
        "parquet": (
            tmp / "claims.parquet",
            write_parquet,
            "parquet",
            {"judge_model": "bench-judge", "judge_prompt_version": "v1"},
        ),
    }
    for path, write, _, _ in files.values():
        write(data, path)
    # Round robin over the formats, best of --repeat each: a noisy machine then slows every
    # format alike instead of whichever happened to run during the noise.
    best: dict[str, float] = dict.fromkeys(files, float("inf"))
    best_cpu: dict[str, float] = dict.fromkeys(files, float("inf"))
    claims: dict[str, int] = {}
    for r in range(args.repeat):
        for label, (path, _, adapter, options) in files.items():
            db_path = tmp / f"{path.name}-{r}.db"  # one path per import: migrations run once per path
            with store.session(db_path) as db:
                if adapter is None:
                    dt, rep = timed(lambda db=db, path=path: import_answers(db, path))
                else:
                    dt, (rep, _) = timed(
                        lambda db=db, path=path, adapter=adapter, options=options: adapters.import_file(
                            db, adapter, path, **options
                        )
                    )
            best[label] = min(best[label], dt[0])
            best_cpu[label] = min(best_cpu[label], dt[1])
            claims[label] = rep.claims_new
            db_path.unlink()
    results = {
        label: (best[label], best_cpu[label], claims[label], path.stat().st_size / 1e6)
        for label, (path, *_) in files.items()
    }

    shutil.rmtree(tmp)
    n_native, t_native, c_native = (
        results["native JSONL"][2],
        results["native JSONL"][0],
        results["native JSONL"][1],
    )
    load = os.getloadavg()[0]
    print(
        f"{args.claims:,} claims, {len(data):,} answers; best of {args.repeat}; in {tmp.parent}; "
        f"python {sys.version.split()[0]}; load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    # CPU seconds are reported beside wall seconds: on a shared machine they vary far less.
    print(
        f"{'format':<20} {'file MB':>8} {'wall s':>7} {'claims/s':>9} {'vs native':>9} "
        f"{'CPU s':>6} {'claims/CPU s':>12} {'vs native':>9}"
    )
    for label, (dt, cpu, n, mb) in results.items():
        print(
            f"{label:<20} {mb:>8.1f} {dt:>7.2f} {n / dt:>9,.0f} {(n / dt) / (n_native / t_native):>9.0%} "
            f"{cpu:>6.2f} {n / cpu:>12,.0f} {(n / cpu) / (n_native / c_native):>9.0%}"
        )
        if n != n_native:
            print(f"  !! {label} imported {n} claims, native {n_native}")


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
