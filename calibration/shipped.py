"""The files the package ships beside its code: the demo data (data/demo, data/wice).

They stay where the project's layout puts them (a checkout reads them there); the wheel maps
them into `calibration/share/` in the same layout (pyproject.toml's build configuration). So one
folder holds them, whichever way the package was installed: the wheel's copy when there is one,
else the checkout. The app (app.py, pages/, the `calibration_app` package) is the app's own:
this package never imports it and names only its server script, for `calibration serve`.
"""

from __future__ import annotations

from pathlib import Path

from .errors import NotFoundError

PACKAGE_DIR = Path(__file__).resolve().parent
INSTALLED = PACKAGE_DIR / "share"
CHECKOUT = PACKAGE_DIR.parent
# The app package sits beside this one, in a checkout and in an installed wheel alike.
SERVER_SCRIPT = PACKAGE_DIR.parent / "calibration_app" / "server.py"


def root() -> Path:
    """The folder holding data/: the installed copy if there is one, else the checkout."""
    return INSTALLED if INSTALLED.is_dir() else CHECKOUT


def path(relative: str) -> Path:
    """A shipped file by its path in the checkout (`data/wice/...`); NotFoundError when absent."""
    found = root() / relative
    if not found.is_file():
        raise NotFoundError(
            f"{relative} is not installed (looked in {found.parent}): reinstall the "
            "package, or run from a source checkout"
        )
    return found


def server_script() -> Path:
    """What `streamlit run` starts: the app and the review card's route (calibration_app/server.py)."""
    if not SERVER_SCRIPT.is_file():
        raise NotFoundError(f"the app is not installed (looked for {SERVER_SCRIPT}): reinstall the package")
    return SERVER_SCRIPT


__all__ = ["CHECKOUT", "INSTALLED", "path", "root", "server_script"]
