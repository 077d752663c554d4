"""Packaging facts the code relies on: the console command, the declared dependencies, and the
one private Streamlit attribute the app touches."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_console_command_points_at_the_cli() -> None:
    target = PYPROJECT["project"]["scripts"]["calibration"]
    module, _, attr = target.partition(":")
    assert getattr(importlib.import_module(module), attr) is importlib.import_module("calibration.cli").main


def test_every_third_party_import_is_declared() -> None:
    declared = {d.split(">")[0].split("<")[0].split("=")[0].strip().lower()
                for d in PYPROJECT["project"]["dependencies"]}
    # Import name -> distribution name, where they differ.
    for module, dist in {"streamlit": "streamlit", "altair": "altair", "pandas": "pandas",
                         "sqlite_utils": "sqlite-utils", "numpy": "numpy", "scipy": "scipy",
                         "krippendorff": "krippendorff", "httpx": "httpx", "pydantic": "pydantic"}.items():
        importlib.import_module(module)
        assert dist in declared, dist


def test_requirements_install_the_package_itself() -> None:
    # One list of dependencies: pyproject.toml. The requirements files only point at it.
    assert "." in (ROOT / "requirements.txt").read_text().split()
    assert ".[dev]" in (ROOT / "requirements-dev.txt").read_text().split()


def test_the_private_streamlit_attribute_ui_switches_off_still_exists() -> None:
    # ui._leave_pages_directory_mode sets PagesManager.uses_pages_directory = False so a deep
    # link on a fresh server runs app.py (see its docstring). If a Streamlit release drops or
    # renames it, deep links break silently: this fails first, and pyproject caps streamlit.
    from streamlit.runtime.pages_manager import PagesManager

    assert "uses_pages_directory" in vars(PagesManager)
    assert any(d.startswith("streamlit>=") and "<" in d for d in PYPROJECT["project"]["dependencies"])
