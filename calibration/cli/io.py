"""`import`, `import-labels`, `demo` and `export`."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import export, importing, store
from ..errors import InputError
from ..models import Verdict, parse_mapping
from .common import db_path
from .common import encoding as _encoding
from .common import map_item as _map_item


def _mapping(args: argparse.Namespace) -> dict[str, Verdict]:
    try:
        return parse_mapping(args.map)
    except ValueError as exc:
        raise InputError(str(exc)) from exc


def cli_import(args: argparse.Namespace) -> int:
    mapping = _mapping(args)
    with store.session(db_path(args)) as db:
        for path in args.files:
            rep = importing.import_answers(db, path, judge_model=args.judge_model,
                                           judge_prompt_version=args.judge_prompt_version,
                                           mapping=mapping, encoding=args.encoding, update=args.update)
            print(f"{path}:")
            for line in rep.lines():
                print(f"  {line}")
    return 0


def cli_import_labels(args: argparse.Namespace) -> int:
    mapping = _mapping(args)
    with store.session(db_path(args)) as db:
        for path in args.files:
            rep = importing.import_labels(db, path, reviewer=args.reviewer, mapping=mapping,
                                          encoding=args.encoding)
            print(f"{path}:")
            for line in rep.lines():
                print(f"  {line}")
    return 0


def cli_demo(args: argparse.Namespace) -> int:
    with store.session(db_path(args)) as db:
        for line in importing.load_demo(db):
            print(line)
    return 0


def cli_export(args: argparse.Namespace) -> int:
    with store.session(db_path(args)) as db:
        rep = export.export(db, args.out, fmt=args.format, judge_run=args.judge_run, cycle=args.cycle,
                            only_final=args.only_final)
    for line in rep.lines():
        print(line)
    return 0


def _add_import(sub: argparse._SubParsersAction) -> None:
    map_help = "map an extra verdict spelling, e.g. partially_supported=UNSUPPORTED (repeatable)"
    enc_help = "file encoding when not UTF-8 (UTF-8 with or without a BOM is the default)"
    p = sub.add_parser("import", help="import judged answers (JSONL or a JSON array)")
    p.add_argument("files", nargs="+", type=Path, help="JSONL or JSON files; each is all or nothing")
    p.add_argument("--judge-model", help="judge model for lines that do not name one")
    p.add_argument("--judge-prompt-version", help="judge prompt version for lines that do not name one")
    p.add_argument("--map", action="append", default=[], metavar="SPELLING=VERDICT", type=_map_item,
                   help=map_help)
    p.add_argument("--encoding", default=None, type=_encoding, help=enc_help)
    p.add_argument("--update", action="store_true",
                   help="replace the category and metadata of answers already imported with the same "
                   "text (without it a changed category or metadata is refused)")
    p.set_defaults(handler=cli_import)

    p = sub.add_parser("import-labels", help="import human labels from CSV")
    p.add_argument("files", nargs="+", type=Path,
                   help="CSV with answer_id, claim_id, verdict[, reviewer, note, evidence]")
    p.add_argument("--reviewer", help="reviewer for files without a reviewer column")
    p.add_argument("--map", action="append", default=[], metavar="SPELLING=VERDICT", type=_map_item,
                   help=map_help)
    p.add_argument("--encoding", default=None, type=_encoding, help=enc_help)
    p.set_defaults(handler=cli_import_labels)

    p = sub.add_parser("demo", help="load the demo data (DEMO-RAG-v1 and WiCE)")
    p.set_defaults(handler=cli_demo)


def _add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export calibrated labels: lossless JSONL, golden set or CSV",
                       description="Export claims with their human and judge verdicts. The jsonl "
                       "export restores into another database with `import FILE` then "
                       "`import-labels FILE`.")
    p.add_argument("--out", required=True, type=Path, help="file to write (replaced atomically)")
    p.add_argument("--format", choices=export.FORMATS, default="jsonl",
                   help="jsonl: lossless, one line per claim; golden: RAG golden set, one line per "
                   "answer; csv: for spreadsheets (UTF-8 with BOM)")
    p.add_argument("--judge-run", help="only claims this run judged, and only its verdicts (MODEL@VERSION)")
    p.add_argument("--cycle", help="only the claims of this cycle")
    p.add_argument("--only-final", action="store_true",
                   help="only claims with a final human verdict (adjudicated or unanimous)")
    p.set_defaults(handler=cli_export)


def register(sub: argparse._SubParsersAction) -> None:
    _add_import(sub)
    _add_export(sub)
