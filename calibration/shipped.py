"""The files the package ships beside its code: the Streamlit app (app.py, ui.py, pages/ and
the app's .streamlit/config.toml) and the demo data (data/demo, data/wice).

They stay where the project's layout puts them (`streamlit run server.py` works in a checkout). A
wheel carries copies in `calibration/share/`, in the same layout: setup.py's build step puts
there the files `[tool.calibration] shipped` in pyproject.toml names. So one folder holds all of
them, whichever way the package was installed: the wheel's copy when there is one, else the
checkout.
"""

from __future__ import annotations

from pathlib import Path

from .errors import NotFoundError

PACKAGE_DIR = Path(__file__).resolve().parent
INSTALLED = PACKAGE_DIR / "share"
CHECKOUT = PACKAGE_DIR.parent


def root() -> Path:
    """The folder holding app.py and data/: the installed copy if there is one, else the checkout."""
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


def app_script() -> Path:
    """The Streamlit script, app.py (every page)."""
    return path("app.py")


def server_script() -> Path:
    """What `streamlit run` starts: server.py, the app and the review card's verdict route."""
    return path("server.py")


__all__ = ["CHECKOUT", "INSTALLED", "app_script", "path", "root", "server_script"]
