"""What every command module shares: the database path and argument types."""

from __future__ import annotations

import argparse
import codecs
from pathlib import Path

from .. import store
from ..models import parse_mapping


def db_path(args: argparse.Namespace) -> Path:
    """The database a command works on: --db, else $CALIBRATION_DB, else data/calibration.db."""
    return Path(args.db) if args.db else store.default_db_path()


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
