"""What every command module shares: the database path and argument types."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from .. import store
from ..errors import InputError, Option
from ..models import parse_mapping
from ..reading import text_encoding

# The flag (or command) that sets each option a message may name (`errors.Problem.text`,
# `errors.CalibrationError.lines`).
FLAGS: Mapping[Option, str] = {
    Option.ENCODING: "--encoding",
    Option.JUDGE_MODEL: "--judge-model",
    Option.JUDGE_PROMPT_VERSION: "--judge-prompt-version",
    Option.MAP: "--map",
    Option.COLUMNS: "--columns",
    Option.REVIEWER: "--reviewer",
    Option.UPDATE: "--update",
    Option.SOURCE: "--from",
    Option.SKIP_FAILED: "--skip-failed",
    Option.FORCE: "--force",
    Option.INCLUDE_LABELED: "--include-labeled",
    Option.HOLDOUT: "--holdout",
    Option.MARK_HOLDOUT: "holdout add ANSWER_ID ...",
    Option.FORCE_CLOSE: "--force",
    Option.DB: "--db",
    Option.FORMAT: "--format",
    Option.MAX_TOKENS: "--max-tokens",
    Option.JSON_MODE: "--json-mode",
    Option.BASELINE: "--baseline",
    Option.REVISES: "--revises RUN",
    Option.PROMPT_FILE: "--prompt-file",
}


def db_path(args: argparse.Namespace) -> Path | str:
    """The database a command works on: --db (a path or a postgresql:// URL), else
    $CALIBRATION_DB, else data/calibration.db."""
    if args.db:
        return args.db if store.is_postgres(args.db) else Path(args.db)
    return store.default_db_url()


def note_new_database(shown: str) -> None:
    """Say that a database is about to be created: a mistyped location would otherwise fill a new
    database nobody looks at. `shown`: the location as `store.shown` gives it."""
    print(f"note: no database at {shown}: creating a new one", file=sys.stderr)


def map_item(text: str) -> str:
    """argparse type for --map: a bad mapping is a usage error (exit 2), not bad input."""
    try:
        parse_mapping([text])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{text!r}: ")) from None
    return text


def encoding(text: str) -> str:
    """argparse type for --encoding: the reader's own check, so a name it would refuse (unknown,
    or rot13 and other transforms) is a usage error before any file is opened."""
    try:
        return text_encoding(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
