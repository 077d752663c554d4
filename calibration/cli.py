"""`python -m calibration`: a thin shell over the package.

Exit codes: 0 success, 1 invalid input or a refused operation (message on stderr),
2 usage errors (argparse's own convention).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import store
from .errors import CalibrationError

Handler = Callable[[argparse.Namespace], int]


def _db_path(args: argparse.Namespace) -> Path:
    return Path(args.db) if args.db else store.default_db_path()


# ---------------------------------------------------------------- import / info / demo


def _add_foundation(sub: argparse._SubParsersAction) -> None:
    from . import importing

    p = sub.add_parser("import", help="import judged answers (JSONL or a JSON array)")
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--judge-model", help="judge model for lines that do not name one")
    p.add_argument("--judge-prompt-version", help="judge prompt version for lines that do not name one")
    p.add_argument("--map", action="append", default=[], metavar="SPELLING=VERDICT",
                   help="map an extra verdict spelling, e.g. partially_supported=UNSUPPORTED")
    p.add_argument("--encoding", default=None,
                   help="file encoding when not UTF-8 (UTF-8 with or without BOM is the default)")
    p.set_defaults(handler=importing.cli_import)

    p = sub.add_parser("import-labels", help="import human labels from CSV")
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--reviewer", help="reviewer for files without a reviewer column")
    p.add_argument("--map", action="append", default=[], metavar="SPELLING=VERDICT")
    p.add_argument("--encoding", default=None)
    p.set_defaults(handler=importing.cli_import_labels)

    p = sub.add_parser("demo", help="load the demo data (DEMO-RAG-v1 and WiCE)")
    p.set_defaults(handler=importing.cli_demo)

    p = sub.add_parser("info", help="counts per judge run")
    p.set_defaults(handler=cli_info)


def cli_info(args: argparse.Namespace) -> int:
    with store.session(_db_path(args)) as db:
        summary = store.info(db)
    totals = summary["totals"]
    print(f"database: {_db_path(args)}")
    print("answers {answers}, claims {claims}, labeled claims {labeled_claims}, "
          "reviewers {reviewers}, label events {label_events}".format(**totals))
    runs = summary["runs"]
    if not runs:
        print("no judge runs yet")
    for r in runs:
        verdicts = ", ".join(f"{k} {v}" for k, v in r.verdicts.items())
        print(f"  {r.run.name}: {r.answers} answers, {r.claims} claims ({verdicts}); "
              f"{r.labeled_claims} claims with a human label")
    return 0


# Later subcommands register here, each from its own module's section.
REGISTRARS: list[Callable[[argparse._SubParsersAction], None]] = [_add_foundation]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m calibration",
                                     description="Check an LLM judge against human reviewers.")
    parser.add_argument("--db", help="SQLite database (default: $CALIBRATION_DB or data/calibration.db)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in REGISTRARS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except CalibrationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
