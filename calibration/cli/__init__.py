"""`calibration` (or `python -m calibration`): a thin shell over the package.

Exit codes: 0 success, 1 invalid input, a refused operation or a storage failure (one line on
stderr, never a traceback), 2 usage errors (argparse's own convention).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import __version__, store
from ..errors import CalibrationError, StorageError
from . import cycles, io, judge, labels, reviewers, serve, split
from .common import FLAGS, note_new_database
from .common import db_path as _db_path

# The only package that imports argparse or prints: each module registers its commands.
REGISTRARS = [
    io.register,
    labels.register,
    cycles.register,
    reviewers.register,
    judge.register,
    split.register,
    serve.register,
]

# Commands that may start from no database; every other one reads an existing one.
CREATING_COMMANDS = {"import", "import-labels", "demo", "restore", "serve"}
# Commands that take no --db: they name their databases as arguments and say which one a
# message is about themselves.
NO_DB_COMMANDS = {"migrate-db"}
MODULE_PROG = "python -m calibration"

EPILOG = "exit status: 0 success, 1 invalid input or a refused operation (message on stderr), 2 usage error"


def invoked_name(argv0: str) -> str:
    """The name a person typed to start the CLI, for its usage and hints: the console script's
    name (`calibration`, or however it was installed), or `python -m calibration`."""
    name = Path(argv0).name
    return MODULE_PROG if name in ("__main__.py", "-m", "-c", "") else name


def build_parser(prog: str = "calibration") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Check an LLM judge against human reviewers.", epilog=EPILOG
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--db",
        help="SQLite database file or postgresql:// URL (default: $CALIBRATION_DB or data/calibration.db)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in REGISTRARS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run one command. `argv` defaults to the command line, and `prog` then to how it was
    invoked; a caller passing `argv` is not a command line, and is `calibration` by default."""
    if prog is None:
        prog = invoked_name(sys.argv[0]) if argv is None else "calibration"
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.command in NO_DB_COMMANDS:
        return _run(args, None)
    db = _db_path(args)
    shown = store.shown(db)
    if args.command not in CREATING_COMMANDS and not store.exists(db):
        # A read must not silently create an empty database and report zeros from it.
        print(
            f"error: no database at {shown}: import judged answers first "
            f"({prog} import FILE, or {prog} demo)",
            file=sys.stderr,
        )
        return 1
    if not store.exists(db):
        note_new_database(shown)
    return _run(args, shown)


def _run(args: argparse.Namespace, shown: str | None) -> int:
    """Run the command's handler; `shown`: the database it works on, as messages show it (None
    for a command that names its databases itself)."""
    try:
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except StorageError as exc:
        # One sentence, with the path here (pages show the sentence without it).
        print(f"error: {shown + ': ' if shown else ''}{exc}", file=sys.stderr)
        return 1
    except CalibrationError as exc:
        print("error: " + "\n".join(exc.lines(FLAGS)), file=sys.stderr)
        return 1
    except BrokenPipeError:
        # A reader such as `| head` closed the pipe: nothing went wrong on our side.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        # A file the command was told to read or write (not the database) cannot be used.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
