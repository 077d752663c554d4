"""The command line as this install runs it: what the app's hints show leads, and that no page
shows `python -m calibration` or a reviewer any command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from calibration import commands

from .conftest import ROOT


def test_an_install_on_the_path_is_called_by_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Path(sys.executable).parent / "calibration"
    assert script.is_file()  # the suite runs from the venv the Makefile installs
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    assert commands.command("import FILE") == "calibration import FILE"


def test_a_checkout_off_the_path_is_called_by_its_script(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `calibration` on it
    script = Path(sys.executable).parent / "calibration"
    monkeypatch.chdir(script.parents[2])  # the checkout holding .venv
    assert commands.cli_name() == str(Path(script.parent.parent.name) / "bin" / "calibration")
    monkeypatch.chdir(tmp_path)  # elsewhere: the whole path
    assert commands.cli_name() == str(script)


def test_without_the_script_the_interpreter_runs_the_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    python = tmp_path / "bin" / "python"  # an interpreter with no console script beside it
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert commands.cli_name() == f"{python} -m calibration"


def test_no_page_spells_a_command_by_hand() -> None:
    sources = {
        p.name: p.read_text(encoding="utf-8")
        for p in [ROOT / "app.py", *(ROOT / "calibration_app").glob("*.py"), *(ROOT / "pages").glob("*.py")]
    }
    assert not [
        name for name, text in sources.items() if "python -m calibration" in text or "bin/calibration" in text
    ]
    # The reviewer's page shows no command line at all; Home shows one to leads only.
    assert "commands." not in sources["review.py"]
