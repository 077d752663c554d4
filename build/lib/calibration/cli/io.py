"""`import`, `import-labels`, `demo` and `export`."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import encoding as _encoding
from .common import map_item as _map_item


def _add_import(sub: argparse._SubParsersAction) -> None:
    from .. import importing

    map_help = "map an extra verdict spelling, e.g. partially_supported=UNSUPPORTED (repeatable)"
    enc_help = "file encoding when not UTF-8 (UTF-8 with or without a BOM is the default)"
    p = sub.add_parser("import", help="import judged answers (JSONL or a JSON array)")
    p.add_argument("files", nargs="+", type=Path, help="JSONL or JSON files; each is all or nothing")
    p.add_argument("--judge-model", help="judge model for lines that do not name one")
    p.add_argument("--judge-prompt-version", help="judge prompt version for lines that do not name one")
    p.add_argument("--map", action="append", default=[], metavar="SPELLING=VERDICT", type=_map_item,
                   help=map_help)
    p.add_argument("--encoding", default=None, type=_encoding, help=enc_help)
    p.set_defaults(handler=importing.cli_import)

    p = sub.add_parser("import-labels", help="import human labels from CSV")
    p.add_argument("files", nargs="+", type=Path,
                   help="CSV with answer_id, claim_id, verdict[, reviewer, note, evidence]")
    p.add_argument("--reviewer", help="reviewer for files without a reviewer column")
    p.add_argument("--map", action="append", default=[], metavar="SPELLING=VERDICT", type=_map_item,
                   help=map_help)
    p.add_argument("--encoding", default=None, type=_encoding, help=enc_help)
    p.set_defaults(handler=importing.cli_import_labels)

    p = sub.add_parser("demo", help="load the demo data (DEMO-RAG-v1 and WiCE)")
    p.set_defaults(handler=importing.cli_demo)


def _add_export(sub: argparse._SubParsersAction) -> None:
    from .. import export

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
    p.set_defaults(handler=export.cli_export)




def register(sub: argparse._SubParsersAction) -> None:
    _add_import(sub)
    _add_export(sub)
