"""The command line as this install runs it, for the hints the app shows leads.

`calibration` when that name on the PATH is this install's script (a `pip install`, or an
activated venv); else the script's own path (`.venv/bin/calibration` from a checkout); else this
interpreter with `-m calibration`, which works wherever the package imports.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

NAME = "calibration"


def cli_name() -> str:
    """How a person at this machine starts this install's command line."""
    script = Path(sys.executable).parent / NAME
    found = shutil.which(NAME)
    if found is not None and script.is_file() and Path(found).resolve() == script.resolve():
        return NAME
    if script.is_file():
        try:
            return str(script.relative_to(Path.cwd()))
        except ValueError:
            return str(script)
    return f"{sys.executable} -m {NAME}"


def command(args: str) -> str:
    """`args` as a whole command line of this install, e.g. command("import FILE")."""
    return f"{cli_name()} {args}"


__all__ = ["NAME", "cli_name", "command"]
