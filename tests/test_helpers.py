"""The traceback checks fail loudly when fed a traceback, and pass on ordinary text."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers import assert_no_page_exception, assert_no_traceback

ROOT = Path(__file__).resolve().parents[1]


def _real_traceback() -> str:
    proc = subprocess.run(
        [sys.executable, "-c", "import json; json.loads('{')"], capture_output=True, text=True, check=False
    )
    return proc.stderr


@pytest.mark.parametrize(
    "text",
    [
        _real_traceback(),
        b'some output\nTraceback (most recent call last):\n  File "/srv/app.py", line 3\n',
        "ok\nTraceback (most recent call last):\nKeyError: 'x'",
    ],
)
def test_a_traceback_fails(text: str | bytes) -> None:
    shown = r"(?s)a traceback reached stderr of the test:\n.*Traceback \(most recent call last\)"
    with pytest.raises(AssertionError, match=shown):
        assert_no_traceback(text, "stderr of the test")


@pytest.mark.parametrize("text", [None, "", b"", "error: the database file has disappeared", "traceback"])
def test_ordinary_output_passes(text: str | bytes | None) -> None:
    assert_no_traceback(text, "stdout")  # the mark is case-sensitive, as CPython prints it


@dataclass
class _FakeRun:
    exception: list[object] = field(default_factory=list)


@dataclass
class _Exc:
    value: str


def test_an_apptest_exception_fails() -> None:
    assert_no_page_exception(_FakeRun())
    with pytest.raises(AssertionError, match=r"an exception reached /dashboard \(1\):\nKeyError: 3"):
        assert_no_page_exception(_FakeRun([_Exc("KeyError: 3")]), "/dashboard")


def _pytest_with_our_hooks(test_file: Path) -> subprocess.CompletedProcess[str]:
    """Run pytest on one file with this suite's conftest (its hooks and autouse fixtures) and
    nothing else of the project's configuration."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.conftest",
            "--rootdir",
            str(test_file.parent),
            "-c",
            os.devnull,
            str(test_file),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.slow
def test_the_cli_hook_fails_a_cli_test_that_prints_a_traceback(tmp_path: Path) -> None:
    # The hook in tests/conftest.py turns a passing test whose captured output holds a traceback
    # into a failure, in a module that uses the CLI; a quiet test of the same module passes.
    (tmp_path / "test_x.py").write_text(
        "from calibration.cli import main  # noqa: F401\n\n"
        "def test_prints_one():\n    print('Traceback (most recent call last):')\n\n"
        "def test_quiet():\n    print('all fine')\n",
        encoding="utf-8",
    )
    proc = _pytest_with_our_hooks(tmp_path / "test_x.py")
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout + proc.stderr
    assert "a traceback reached the output of test_prints_one" in proc.stdout


@pytest.mark.slow
def test_an_apptest_run_with_an_exception_fails_at_teardown(tmp_path: Path) -> None:
    # The autouse fixture in tests/conftest.py checks every AppTest run of a test, even one the
    # test never looked at.
    (tmp_path / "test_y.py").write_text(
        "from streamlit.testing.v1 import AppTest\n\n"
        "def _boom():\n    raise ValueError('boom')\n\n"
        "def test_unchecked_page():\n    AppTest.from_function(_boom).run()\n\n"
        "def _fine():\n    import streamlit as st\n    st.write('ok')\n\n"
        "def test_fine_page():\n    AppTest.from_function(_fine).run()\n",
        encoding="utf-8",
    )
    proc = _pytest_with_our_hooks(tmp_path / "test_y.py")
    assert "2 passed, 1 error" in proc.stdout, proc.stdout + proc.stderr
    assert "an exception reached an AppTest page (1)" in proc.stdout
