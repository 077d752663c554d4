"""What every command module shares: the database path and argument types."""

from __future__ import annotations

import argparse
import codecs
from pathlib import Path

from .. import store
from ..models import parse_mapping


def db_path(args: argparse.Namespace) -> Path | str:
    """The database a command works on: --db (a path or a postgresql:// URL), else
    $CALIBRATION_DB, else data/calibration.db."""
    if args.db:
        return args.db if store.is_postgres(args.db) else Path(args.db)
    return store.default_db_url()


def map_item(text: str) -> str:
    """argparse type for --map: a bad mapping is a usage error (exit 2), not bad input."""
    try:
        parse_mapping([text])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--map {text!r}: ")) from None
    return text


def encoding(text: str) -> str:
    try:
        codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown encoding {text!r}") from None
    return text
