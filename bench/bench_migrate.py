"""`migrate-db` at scale: an SQLite database of 100,000 claims copied into PostgreSQL and back,
and every export of the three compared byte for byte.

    python bench/bench_migrate.py [--labels 100000] [--keep FOLDER]

The SQLite database is built through the package's own import (bench_label_import's judged
answers of three claims and one label file with a verdict for each claim) plus an open cycle of
500 answers, as a lead would with the CLI. A throwaway PostgreSQL server (tests/pg_server.py)
takes the copy; `migrate-db` then copies it into a second, new SQLite file. The export formats
(`export --format jsonl|golden|csv`) and `backup` are written from the source, the PostgreSQL
copy and the file copied back. Exports must be the same bytes; a backup's first line carries the
time it was written, so its rows are compared: in their order, else as sets. (A backup lists a
table's rows in the order written on SQLite, by key on PostgreSQL, which keeps no such order:
rows keyed by text, such as answers, come back from PostgreSQL in key order. The copy back's
backup is therefore also compared with the PostgreSQL copy's, where it must be the same bytes.)
Prints each step's wall time and the result; exits 1 when any output differs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_label_import import make_files  # noqa: E402
from calibration import cycles, store  # noqa: E402
from calibration.cli import main as cli  # noqa: E402
from calibration.export import FORMATS  # noqa: E402
from calibration.importing import import_answers, import_labels  # noqa: E402
from tests.pg_server import Cluster  # noqa: E402

CYCLE_SIZE = 500


@contextlib.contextmanager
def timed(what: str, times: dict[str, float]) -> Iterator[None]:
    t0 = time.perf_counter()
    yield
    times[what] = time.perf_counter() - t0
    print(f"  {what:<44} {times[what]:>8.1f} s", flush=True)


def run(*args: str | Path, db: str | Path) -> str:
    """`calibration --db DB ARGS...` in this process; its standard output (exit 1 on failure)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(["--db", str(db), *map(str, args)])
    if code != 0:
        raise SystemExit(f"calibration {' '.join(map(str, args))} failed ({code}): {err.getvalue()}")
    return out.getvalue()


def build(folder: Path, n_labels: int, db: Path) -> int:
    answers, labels = make_files(folder, n_labels)
    with store.session(db) as conn:
        import_answers(conn, answers)
        import_labels(conn, labels)
        cycles.create_cycle(
            conn,
            name="bench",
            judge_run="bench@v1",
            size=CYCLE_SIZE,
            seed=1,
            include_labeled=True,
            force=True,
        )
        return int(conn.execute("SELECT count(*) FROM claims").fetchone()[0])


def outputs(db: str | Path, folder: Path, tag: str, times: dict[str, float]) -> dict[str, bytes]:
    """Every export format and the backup of `db`, as bytes (the backup without its header)."""
    found: dict[str, bytes] = {}
    for fmt in FORMATS:
        path = folder / f"{tag}.{fmt}"
        with timed(f"export --format {fmt} of the {tag}", times):
            run("export", "--format", fmt, "--out", path, db=db)
        found[fmt] = path.read_bytes()
    path = folder / f"{tag}.backup.jsonl"
    with timed(f"backup of the {tag}", times):
        run("backup", "--out", path, db=db)
    found["backup"] = path.read_bytes().split(b"\n", 1)[1]
    return found


def compare(name: str, a: dict[str, bytes], b: dict[str, bytes]) -> bool:
    same = True
    for what in a:
        if a[what] == b[what]:
            verdict = "identical"
        elif what == "backup" and sorted(a[what].splitlines()) == sorted(b[what].splitlines()):
            verdict = "the same rows, in another order"
        else:
            verdict, same = "DIFFERENT", False
        print(f"  {name:<26} {what:<7} {len(a[what]) / 2**20:>7.1f} MB  {verdict}")
    return same


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labels", type=int, default=100_000, help="labels (one per claim) to build")
    ap.add_argument("--keep", type=Path, help="leave the databases and outputs in this folder")
    args = ap.parse_args()
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        source, back = folder / "source.db", folder / "back.db"
        for path in (source, back):
            path.unlink(missing_ok=True)
        print("steps")
        with timed("build the SQLite database (import)", times):
            claims = build(folder, args.labels, source)
        cluster = Cluster()
        try:
            pg = cluster.new_database()
            with timed("migrate-db SQLite -> PostgreSQL", times):
                run("migrate-db", source, pg, db=source)
            with timed("migrate-db PostgreSQL -> SQLite", times):
                copied = run("migrate-db", pg, back, db=source)
            a = outputs(source, folder, "source", times)
            p = outputs(pg, folder, "postgresql", times)
            b = outputs(back, folder, "copy back", times)
            cluster.drop_database(pg)
        finally:
            cluster.stop()
    print(f"\n{claims:,} claims; {copied.splitlines()[1]}")
    print("outputs against the source's")
    same = compare("PostgreSQL copy", a, p) & compare("SQLite copied back", a, b)
    # Once through PostgreSQL, rows keyed by text are written in key order: from there on the
    # two engines' backups agree to the byte.
    print("the copy back against the PostgreSQL copy")
    same &= compare("SQLite copied back", {"backup": p["backup"]}, {"backup": b["backup"]})
    print(
        f"\nresult: {'identical exports' if same else 'OUTPUTS DIFFER'}; "
        f"SQLite -> PostgreSQL {times['migrate-db SQLite -> PostgreSQL']:.1f} s, "
        f"PostgreSQL -> SQLite {times['migrate-db PostgreSQL -> SQLite']:.1f} s"
    )
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    from figures import recorded  # bench/ is the script's folder

    with recorded(__file__):
        main()
