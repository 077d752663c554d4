"""`import`, `import-labels`, `demo`, `export`, `backup` and `restore`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import adapters, backup, export, importing, mlflow_traces, store
from ..errors import CalibrationError, InputError, phrase
from ..fmt import plural
from ..models import Verdict, parse_mapping
from .common import FLAGS, db_path, note_new_database
from .common import encoding as _encoding
from .common import map_item as _map_item


def _mapping(args: argparse.Namespace) -> dict[str, Verdict]:
    try:
        return parse_mapping(args.map)
    except ValueError as exc:
        raise InputError(f"--map {exc}") from exc


# --from options, by the adapter keyword they set.
_ADAPTER_FLAGS = {
    "columns": "--columns",
    "delimiter": "--delimiter",
    "metric": "--metric",
    "id_key": "--id-key",
    "id_prefix": "--id-prefix",
    "id_field": "--id-field",
    "skip_failed": "--skip-failed",
}


def _adapter_options(args: argparse.Namespace, name: str) -> dict[str, Any]:
    """The adapter options given on the command line; InputError for one the adapter does not take."""
    takes = adapters.OPTIONS[name]
    out: dict[str, Any] = {}
    for key, flag in _ADAPTER_FLAGS.items():
        value = getattr(args, key, None)
        if value is None or value is False:
            continue
        if key not in takes:
            raise InputError(f"{flag} does not apply to --from {name}")
        out[key] = value
    return out


_DRY_RUN = " (dry run: nothing was written)"


def cli_import(args: argparse.Namespace) -> int:
    mapping = _mapping(args)
    if args.source == "mlflow":
        return _import_mlflow(args)
    stray_mlflow = [f for f, v in _MLFLOW_FLAGS.items() if getattr(args, v)]
    if stray_mlflow:
        raise InputError(f"{', '.join(stray_mlflow)}: only with --from mlflow")
    if not args.files:
        # A usage error, as argparse says one (exit 2): files are required but with --from mlflow.
        print("error: import: these arguments are required: files (or --from mlflow)", file=sys.stderr)
        raise SystemExit(2)
    if args.source is not None:
        return _import_from(args, mapping)
    stray = [flag for key, flag in _ADAPTER_FLAGS.items() if getattr(args, key, None) not in (None, False)]
    if stray:
        raise InputError(f"{', '.join(stray)}: only with --from")
    with store.session(db_path(args)) as db:
        for path in args.files:
            rep = importing.import_answers(
                db,
                path,
                judge_model=args.judge_model,
                judge_prompt_version=args.judge_prompt_version,
                mapping=mapping,
                encoding=args.encoding,
                update=args.update,
                dry_run=args.dry_run,
            )
            print(f"{path}:" + _DRY_RUN * args.dry_run)
            for line in rep.lines():
                print(f"  {line}")
    return 0


_MLFLOW_FLAGS = {"--tracking-uri": "tracking_uri", "--experiment": "experiment", "--assessment": "assessment"}


def _import_mlflow(args: argparse.Namespace) -> int:
    """`import --from mlflow`: the traces' judge assessments as a judge run (MODEL@ASSESSMENT)."""
    missing = [f for f, v in _MLFLOW_FLAGS.items() if not getattr(args, v)]
    if missing:
        raise InputError(f"--from mlflow needs {', '.join(missing)}")
    if args.files:
        raise InputError("--from mlflow reads the tracking server, not files: leave the files out")
    found = mlflow_traces.read(mlflow_traces.Server(args.tracking_uri), args.experiment, args.assessment)
    source = f"{args.tracking_uri} experiment {args.experiment}"
    with store.session(db_path(args)) as db:
        rep = importing.import_records(
            db,
            found.records,
            source=source,
            judge_model=args.judge_model,
            judge_prompt_version=args.judge_prompt_version or args.assessment,
            mapping=mlflow_traces.mapping(),
            dry_run=args.dry_run,
        )
    print(f"{source}:" + _DRY_RUN * args.dry_run)
    for line in rep.lines():
        print(f"  {line}")
    claims, answers = plural(found.claim_level, "trace"), plural(found.answer_level, "trace")
    print(f"  {claims} judged claim by claim, {answers} judged as a whole answer (one claim: the answer)")
    for why, n in found.skipped.items():
        print(f"  note: {plural(n, 'trace')} left out: {why}")
    return 0


def _import_from(args: argparse.Namespace, mapping: dict[str, Verdict]) -> int:
    name = adapters.canonical(args.source)
    options = _adapter_options(args, name)
    with store.session(db_path(args)) as db:
        for path in args.files:
            rep, result = adapters.import_file(
                db,
                name,
                path,
                judge_model=args.judge_model,
                judge_prompt_version=args.judge_prompt_version,
                mapping=mapping or None,
                encoding=args.encoding,
                dry_run=args.dry_run,
                **options,
            )
            print(f"{path}:" + _DRY_RUN * args.dry_run)
            for line in rep.lines():
                if line.startswith("verdict spellings used") or line.startswith("  "):
                    continue  # the adapter's mapping lines below say it with the tool's names
                print(f"  {line}")
            print("  verdicts mapped:")
            for line in result.mapping_lines(rep.mappings):
                print(f"    {line}")
            for note in result.notes:
                print(f"  note: {phrase(note, FLAGS)}")
    return 0


def cli_import_labels(args: argparse.Namespace) -> int:
    mapping = _mapping(args)
    with store.session(db_path(args)) as db:
        for path in args.files:
            rep = importing.import_labels(
                db, path, reviewer=args.reviewer, mapping=mapping, encoding=args.encoding
            )
            print(f"{path}:")
            for line in rep.lines():
                print(f"  {line}")
    return 0


def cli_demo(args: argparse.Namespace) -> int:
    importing.demo_paths()  # refused before the session: a missing file must not leave an empty database
    with store.session(db_path(args)) as db:
        for line in importing.load_demo(db):
            print(line)
    return 0


def cli_export(args: argparse.Namespace) -> int:
    if args.format == "mlflow":
        return _export_mlflow(args)
    if args.tracking_uri or args.assessment:
        raise InputError("--tracking-uri, --assessment: only with --format mlflow")
    if args.out is None:
        raise InputError("export: --out FILE is needed (the file to write)")
    with store.session(db_path(args)) as db:
        rep = export.export(
            db,
            args.out,
            fmt=args.format,
            judge_run=args.judge_run,
            cycle=args.cycle,
            only_final=args.only_final,
        )
    for line in rep.lines():
        print(line)
    return 0


def _export_mlflow(args: argparse.Namespace) -> int:
    """`export --format mlflow`: the final human labels back to the traces they came from."""
    if not args.tracking_uri:
        raise InputError("--format mlflow needs --tracking-uri URL: the MLflow tracking server")
    if args.out is not None or args.only_final:
        raise InputError("--format mlflow writes to the tracking server: leave out --out and --only-final")
    with store.session(db_path(args)) as db:
        done = export.to_mlflow(
            db,
            mlflow_traces.Server(args.tracking_uri),
            judge_run=args.judge_run,
            cycle=args.cycle,
            assessment=args.assessment,
        )
    print(f"{args.tracking_uri}: human assessments written to {plural(done.traces, 'trace')}")
    if done.left_out:
        print(
            f"  {plural(done.left_out, 'answer')} from MLflow left out: a claim has no final human label yet"
        )
    return 0


def cli_backup(args: argparse.Namespace) -> int:
    with store.session(db_path(args)) as db:
        rep = backup.write_backup(db, args.out)
    for line in rep.lines():
        print(line)
    return 0


def _location(text: str) -> Path | str:
    return text if store.is_postgres(text) else Path(text)


def cli_migrate_db(args: argparse.Namespace) -> int:
    src, dst = _location(args.src), _location(args.dst)
    if not store.exists(src):
        print(f"error: no database at {store.shown(src)}", file=sys.stderr)
        return 1
    new = not store.exists(dst)
    if new:
        note_new_database(store.shown(dst))
    where: Path | str | None = src  # a failure is about the one being opened, else the copy's words
    try:
        with store.session(src) as source:
            where = dst
            with store.session(dst) as target:
                where = None
                summary = backup.copy_store(source, target)
    except CalibrationError as exc:
        if new:
            store.remove_new(dst)
        prefix = f"{store.shown(where)}: " if where is not None else ""
        print(f"error: {prefix}" + "\n".join(exc.lines(FLAGS)), file=sys.stderr)
        return 1
    print(f"{store.shown(src)} -> {store.shown(dst)}")
    for line in summary.lines():
        print(line)
    return 0


def cli_restore(args: argparse.Namespace) -> int:
    path = db_path(args)
    new = not store.exists(path)
    try:
        with store.session(path) as db:
            rep = backup.restore(db, args.file, encoding=args.encoding)
    except CalibrationError:
        if new:
            store.remove_new(path)
        raise
    for line in rep.lines():
        print(line)
    return 0


def _add_import(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    map_help = "map an extra verdict spelling, e.g. partially_supported=UNSUPPORTED (repeatable)"
    enc_help = "file encoding when not UTF-8 (UTF-8 with or without a BOM is the default)"
    p = sub.add_parser(
        "import", help="import judged answers (JSONL or a JSON array, or another tool's output with --from)"
    )
    p.add_argument("files", nargs="*", type=Path, help="JSONL or JSON files; each is all or nothing")
    p.add_argument(
        "--from",
        dest="source",
        metavar="TOOL",
        help=f"read another tool's output: {', '.join(adapters.names())}; or mlflow: the traces of an "
        "MLflow experiment with a judge's assessments (--tracking-uri, --experiment, --assessment)",
    )
    p.add_argument("--tracking-uri", metavar="URL", help="--from mlflow: the MLflow tracking server")
    p.add_argument("--experiment", metavar="NAME", help="--from mlflow: the experiment (name or id)")
    p.add_argument(
        "--assessment", metavar="NAME", help="--from mlflow: the judge's feedback assessment's name"
    )
    p.add_argument(
        "--columns",
        metavar="FIELD=COLUMN,...",
        help="--from csv: column names, e.g. answer_id=qid,claim=statement,verdict=label",
    )
    p.add_argument("--delimiter", help="--from csv: field delimiter (default: tab for .tsv, else comma)")
    p.add_argument("--metric", help="--from deepeval/ragas: the faithfulness metric's name in the file")
    p.add_argument("--id-key", help="--from deepeval: take answer ids from this test-case metadata key")
    p.add_argument("--id-prefix", help="--from ragas: answer ids are PREFIX:<row> (default: file name)")
    p.add_argument("--id-field", help="--from refchecker: the items' id field (default: id)")
    p.add_argument(
        "--skip-failed",
        action="store_true",
        help="--from deepeval/ragas: leave out cases whose metric errored instead of refusing",
    )
    p.add_argument("--dry-run", action="store_true", help="check and report everything, then write nothing")
    p.add_argument("--judge-model", help="judge model for lines that do not name one")
    p.add_argument("--judge-prompt-version", help="judge prompt version for lines that do not name one")
    p.add_argument(
        "--map", action="append", default=[], metavar="SPELLING=VERDICT", type=_map_item, help=map_help
    )
    p.add_argument("--encoding", default=None, type=_encoding, help=enc_help)
    p.add_argument(
        "--update",
        action="store_true",
        help="replace the category and metadata of answers already imported with the same "
        "text (without it a changed category or metadata is refused)",
    )
    p.set_defaults(handler=cli_import)

    p = sub.add_parser("import-labels", help="import human labels from CSV")
    p.add_argument(
        "files",
        nargs="+",
        type=Path,
        help="CSV with answer_id, claim_id, verdict[, reviewer, note, evidence]",
    )
    p.add_argument("--reviewer", help="reviewer for files without a reviewer column")
    p.add_argument(
        "--map", action="append", default=[], metavar="SPELLING=VERDICT", type=_map_item, help=map_help
    )
    p.add_argument("--encoding", default=None, type=_encoding, help=enc_help)
    p.set_defaults(handler=cli_import_labels)

    p = sub.add_parser("demo", help="load the demo data (DEMO-RAG-v1 and WiCE)")
    p.set_defaults(handler=cli_demo)


def _add_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "export",
        help="export calibrated labels: lossless JSONL, golden sets (DeepEval, Ragas, Langfuse too) or CSV",
        description="Export claims with their human and judge verdicts. The jsonl "
        "export restores into another database with `import FILE` then "
        "`import-labels FILE`; a backup of the whole database is `backup`.",
    )
    p.add_argument("--out", type=Path, help="file to write (replaced atomically); not with --format mlflow")
    p.add_argument(
        "--tracking-uri",
        metavar="URL",
        help="--format mlflow: the MLflow tracking server the answers were imported from",
    )
    p.add_argument(
        "--assessment",
        metavar="NAME",
        help="--format mlflow: the name of the human assessments (default: the judge run's prompt "
        "version, the judge's assessment name as import --from mlflow keeps it)",
    )
    p.add_argument(
        "--format",
        choices=[*export.FORMATS, "mlflow"],
        default="jsonl",
        help="jsonl: lossless, one line per claim; golden: RAG golden set, one line per "
        "answer; csv: for spreadsheets (UTF-8 with BOM); deepeval, ragas, langfuse: a golden set "
        "each framework loads (negatives, chunk texts, expected verdicts and provenance included); "
        "mlflow: the final human labels back to the traces as human assessments (--tracking-uri)",
    )
    p.add_argument("--judge-run", help="only claims this run judged, and only its verdicts (MODEL@VERSION)")
    p.add_argument("--cycle", help="only the claims of this cycle")
    p.add_argument(
        "--only-final",
        action="store_true",
        help="only claims with a final human verdict (adjudicated or unanimous)",
    )
    p.set_defaults(handler=cli_export)

    p = sub.add_parser(
        "backup",
        help="back up the whole database to one file (restore it with restore)",
        description="Write every table (cycles, splits and their seal, guidelines, "
        "judge-lab runs, settings...) to one JSONL file; the sign-in secret is left out.",
    )
    p.add_argument("--out", required=True, type=Path, help="file to write (replaced atomically)")
    p.set_defaults(handler=cli_backup)

    p = sub.add_parser(
        "restore",
        help="restore a backup (or a JSONL export) into an empty database",
        description="All or nothing, into an empty database only: a database holding "
        "anything is refused (restore never merges; give a new file with --db).",
    )
    p.add_argument("file", type=Path, help="a file written by backup, or by export --format jsonl")
    p.add_argument(
        "--encoding",
        default=None,
        type=_encoding,
        help="file encoding when not UTF-8 (UTF-8 with or without a BOM is the default)",
    )
    p.set_defaults(handler=cli_restore)

    p = sub.add_parser(
        "migrate-db",
        help="copy a whole database into an empty one (SQLite <-> PostgreSQL)",
        description="Every row, ids and history included, in one transaction on the "
        "target, which must be empty; SRC and DST are SQLite files or postgresql:// URLs "
        "(--db is not used).",
    )
    p.add_argument("src", help="the database to copy from")
    p.add_argument("dst", help="the empty database to copy into (created and migrated when missing)")
    p.set_defaults(handler=cli_migrate_db)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _add_import(sub)
    _add_export(sub)
